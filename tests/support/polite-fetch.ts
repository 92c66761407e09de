/**
 * `fetch` as a well-behaved client calls a counted route: a 429 (the tenant's fair share, CONTRACT.md
 * section 2) is retried after its `Retry-After`, a few times. For suites that test something else
 * with many calls in a row, which a fast machine sends faster than the tenant's rate: what they
 * assert then does not depend on the machine's speed. The fair-share suites use plain `fetch`.
 */
export async function politeFetch(url: string, init?: RequestInit, attempts = 5): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(url, init);
    if (response.status !== 429 || attempt >= attempts) return response;
    await response.arrayBuffer();
    const seconds = Number(response.headers.get('retry-after') ?? '1');
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, seconds) * 1000));
  }
}
