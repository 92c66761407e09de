import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A call the endpoint answered: the `X-Amz-Target` operation, its JSON input and its headers. */
export interface AwsJsonCall {
  readonly target: string;
  readonly input: Record<string, unknown>;
  readonly headers: IncomingHttpHeaders;
}

export interface AwsJsonEndpoint {
  readonly url: string;
  readonly calls: AwsJsonCall[];
  close(): Promise<void>;
}

/**
 * Secrets Manager `GetSecretValue` and SSM `GetParameter` on loopback, in the AWS JSON protocol
 * the SDK clients speak (POST `/`, `X-Amz-Target`, `application/x-amz-json-1.1`), answering from
 * `secrets` (secret id or parameter name → value): what the tenant registry is read from, for the
 * packaged functions run outside Lambda (`AWS_ENDPOINT_URL_SECRETS_MANAGER`, `AWS_ENDPOINT_URL_SSM`).
 * It checks that a request is signed (SigV4 `Authorization`), not the signature itself.
 */
export async function startAwsJsonEndpoint(
  secrets: ReadonlyMap<string, string>,
  options: {
    /** How long to keep each request before answering it (ms), asked per request: a slow or hanging service. */
    readonly answerAfterMs?: () => number;
  } = {},
): Promise<AwsJsonEndpoint> {
  const calls: AwsJsonCall[] = [];
  const server = createServer((request, response) => {
    const delay = options.answerAfterMs?.() ?? 0;
    // The body waits in the paused stream meanwhile.
    if (delay > 0) setTimeout(() => answer(request, response), delay);
    else answer(request, response);
  });
  function answer(request: IncomingMessage, response: ServerResponse) {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      let input: Record<string, unknown> = {};
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        // answered below as a bad request
      }
      calls.push({ target, input, headers: request.headers });
      const reply = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(JSON.stringify(body));
      };
      if (!String(request.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 ')) {
        return reply(400, { __type: 'MissingAuthenticationTokenException', message: 'not signed' });
      }
      if (target === 'secretsmanager.GetSecretValue') {
        const id = String(input.SecretId);
        const value = secrets.get(id);
        if (value === undefined) {
          return reply(400, { __type: 'ResourceNotFoundException', message: `no secret ${id}` });
        }
        return reply(200, {
          ARN: `arn:aws:secretsmanager:eu-central-1:000000000000:secret:${id}`,
          Name: id,
          SecretString: value,
          VersionId: '00000000-0000-0000-0000-000000000001',
          VersionStages: ['AWSCURRENT'],
          CreatedDate: 1.7e9,
        });
      }
      if (target === 'AmazonSSM.GetParameter') {
        const name = String(input.Name);
        const value = secrets.get(name);
        if (value === undefined)
          return reply(400, { __type: 'ParameterNotFound', message: `no parameter ${name}` });
        return reply(200, {
          Parameter: { Name: name, Type: 'SecureString', Value: value, Version: 1, DataType: 'text' },
        });
      }
      return reply(400, { __type: 'UnknownOperationException', message: `not emulated: ${target}` });
    });
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
