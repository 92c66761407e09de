import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOpenApiDocument } from '../../infra/local/docs-routes.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { chromiumPath } from './chromium.js';

let stack: LocalStack;
let browser: Browser;
let profile: string;

beforeAll(async () => {
  const executablePath = chromiumPath();
  stack = await startLocalStack({ port: 0 });
  profile = await mkdtemp(join(tmpdir(), 'docs-page-chromium-'));
  browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
  });
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  if (profile) await rm(profile, { recursive: true, force: true });
});

describe('GET /docs in a real browser', () => {
  it('shows every operation of the document, loading nothing from outside the local stack', async () => {
    const openapi = await readOpenApiDocument();
    // Swagger UI shows each of the document's webhooks (OpenAPI 3.1) as an operation named by the
    // webhook, beside the paths.
    const operations = (items: unknown) =>
      Object.entries((items ?? {}) as Record<string, Record<string, unknown>>).flatMap(([name, item]) =>
        Object.keys(item).map((method) => `${method.toUpperCase()} ${name}`),
      );
    const expected = [...operations(openapi.paths), ...operations(openapi.webhooks)].sort();

    const page = await browser.newPage();
    const elsewhere: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(stack.url) && !request.url().startsWith('data:'))
        elsewhere.push(request.url());
    });
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on('pageerror', (error) => failed.push(String(error)));

    const response = await page.goto(`${stack.url}/docs`, { waitUntil: 'networkidle0' });
    expect(response?.status()).toBe(200);
    // Evaluated in the page (a string: this project compiles without the DOM library).
    await page.waitForFunction(`document.querySelectorAll('.opblock').length >= ${expected.length}`);
    const shown = await page.$$eval('.opblock', (blocks) =>
      blocks.map(
        (block) =>
          `${block.querySelector('.opblock-summary-method')?.textContent?.trim()} ${block
            .querySelector('.opblock-summary-path')
            ?.getAttribute('data-path')}`,
      ),
    );
    expect(shown.sort()).toEqual(expected);
    expect(await page.$eval('.info .title', (title) => title.textContent)).toContain(
      'ERP integration gateway',
    );

    await mkdir('.data', { recursive: true });
    await page.screenshot({ path: '.data/docs-page.png', fullPage: true });
    expect(elsewhere).toEqual([]);
    expect(failed).toEqual([]);
  });
});

describe('GET /docs/{tenant} in a real browser', () => {
  it("shows the tenant's own tables and views, after the browser asked for its Data API user", async () => {
    const page = await browser.newPage();
    // The browser's login prompt for HTTP Basic, answered as a user would.
    await page.authenticate({ username: 'demo', password: 'demo-password' });
    const elsewhere: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(stack.url) && !request.url().startsWith('data:'))
        elsewhere.push(request.url());
    });
    const failed: string[] = [];
    page.on('pageerror', (error) => failed.push(String(error)));
    const response = await page.goto(`${stack.url}/docs/demo`, { waitUntil: 'networkidle0' });
    expect(response?.status()).toBe(200);
    await page.waitForFunction(`document.querySelectorAll('.opblock').length >= 4`);
    const paths = await page.$$eval('.opblock .opblock-summary-path', (items) =>
      items.map((item) => item.getAttribute('data-path')),
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        '/demo/JsonAPI/Data/getData/SUBJECT',
        '/demo/JsonAPI/Data/getDataPaginate/DOKUMENT',
        '/demo/JsonAPI/Data/getData/V_DOKUMENT_SOUBOR',
      ]),
    );
    // Never a table the tenant may not read, nor the Web API's secrets.
    expect(paths.some((path) => /WS_APPLICATION/i.test(String(path)))).toBe(false);
    expect(await page.title()).toContain('tables and views of demo');
    expect(elsewhere).toEqual([]);
    expect(failed).toEqual([]);
  });
});

describe('GET /docs/{tenant}: Authorize with OAuth 2.0 client credentials', () => {
  it("gets a token from the tenant's token endpoint in the page, then calls a route with it", async () => {
    const page = await browser.newPage();
    // The description itself is the tenant's (HTTP Basic); the calls then go with the token.
    await page.authenticate({ username: 'demo', password: 'demo-password' });
    const failed: string[] = [];
    page.on('pageerror', (error) => failed.push(String(error)));
    await page.goto(`${stack.url}/docs/demo`, { waitUntil: 'networkidle0' });
    await page.waitForSelector('.btn.authorize');
    await page.click('.btn.authorize');
    await page.waitForSelector('#client_id_clientCredentials');
    await page.type('#client_id_clientCredentials', 'demo-client');
    await page.type('#client_secret_clientCredentials', 'demo-client-secret');
    const granted = page.waitForResponse((response) => response.url() === `${stack.url}/demo/oauth2/token`);
    // The Authorize button of the oauth2 scheme's own form.
    await page.evaluate(`(() => {
      const form = document.querySelector('#client_id_clientCredentials').closest('.auth-container');
      form.querySelector('.btn.modal-btn.auth.authorize').click();
    })()`);
    const tokenAnswer = await granted;
    expect(tokenAnswer.status()).toBe(200);
    expect(tokenAnswer.request().method()).toBe('POST');
    // Authorized: its form now offers to log out.
    await page.waitForFunction(
      `[...document.querySelectorAll('.auth-container .btn.modal-btn.auth')].some((button) => button.textContent.includes('Logout'))`,
    );
    await page.click('.btn-done, .modal-ux .close-modal');

    // getRowsCount of SUBJECT: open it, "Try it out", "Execute".
    const block = '[id^="operations-"][id*="getRowsCount"][id*="SUBJECT"]';
    await page.waitForSelector(block);
    await page.click(`${block} .opblock-summary`);
    await page.waitForSelector(`${block} .try-out__btn`);
    await page.click(`${block} .try-out__btn`);
    const called = page.waitForResponse((response) =>
      response.url().startsWith(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`),
    );
    await page.waitForSelector(`${block} .execute`);
    await page.click(`${block} .execute`);
    const answer = await called;
    expect(answer.request().headers().authorization).toMatch(/^Bearer ey/);
    expect(answer.status()).toBe(200);
    expect(await answer.json()).toEqual({ SUBJECT: [{ rowsCount: expect.any(Number) }] });
    expect(failed).toEqual([]);
  });
});
