import { startLocalStack } from '../../infra/local/stack.js';
import { forgetCredentials } from '../../shared/lambda/basic-auth.js';
import { report, sampleInterleaved, sampleInterleavedCpu } from './measure.js';

const BASIC = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const CLIENT = `Basic ${Buffer.from('demo-client:demo-client-secret').toString('base64')}`;

/**
 * Bearer tokens (CONTRACT 4d) against HTTP Basic, through the local stack on the embedded
 * database, the same call (getRowsCount of SUBJECT) each way:
 * - warm: a token the instance has verified against Basic credentials it remembers (goal ≤ 1.05×);
 * - first use: a token never seen (jose verifies its ES256 signature) against Basic credentials
 *   not remembered (one scrypt);
 * - the token endpoint with a client whose secret the instance remembers, against the read.
 */
export default async function bearerTokensBench(): Promise<void> {
  const runs = Number(process.env.BENCH_TOKEN_RUNS ?? 200);
  // Calls one after another, faster than a tenant's 50 a second: the rate is not what is measured.
  const stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: { TENANT_REQUESTS_PER_SECOND: '10000' },
  });
  try {
    const url = `${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`;
    const call = async (authorization: string) => {
      const response = await fetch(url, { headers: { authorization } });
      if (response.status !== 200) throw new Error(`${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    };
    const newToken = async () => {
      const response = await fetch(`${stack.url}/demo/oauth2/token`, {
        method: 'POST',
        headers: { authorization: CLIENT, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials&scope=data.read',
      });
      if (response.status !== 200) throw new Error(`token: ${response.status}`);
      return `Bearer ${((await response.json()) as { access_token: string }).access_token}`;
    };

    const token = await newToken();
    const [bearer, basic] = await sampleInterleavedCpu(
      () => call(token),
      () => call(BASIC),
      runs,
      10,
    );
    report(
      'getRowsCount with a bearer token the instance has verified (CPU)',
      bearer,
      'with Basic credentials it remembers',
      basic,
      {
        id: 'bearerTokens.warmTokenVsRememberedBasic',
        goal: 1.05,
      },
    );

    // A token never seen before each run (made untimed beforehand), against Basic credentials the
    // instance has forgotten (as after CREDENTIAL_CACHE_MS, or a new instance).
    const firstRuns = Math.min(runs, 40);
    const fresh: string[] = [];
    for (let i = 0; i < firstRuns + 3; i++) fresh.push(await newToken());
    let next = 0;
    const [firstToken, firstBasic] = await sampleInterleaved(
      () => call(fresh[next++]!),
      async () => {
        forgetCredentials();
        await call(BASIC);
      },
      firstRuns,
    );
    report(
      'getRowsCount with a token never seen (signature verified)',
      firstToken,
      'with Basic credentials not remembered (scrypt)',
      firstBasic,
      {
        id: 'bearerTokens.firstTokenVsFirstBasic',
        goal: 1,
      },
    );

    const [granted, read] = await sampleInterleaved(newToken, () => call(BASIC), Math.min(runs, 100));
    report(
      'POST oauth2/token, the client remembered (a signed token)',
      granted,
      'getRowsCount with remembered Basic',
      read,
      {
        id: 'bearerTokens.tokenEndpointVsRead',
      },
    );
  } finally {
    await stack.stop();
  }
}
