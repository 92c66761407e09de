import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

const found = () => process.env.CHROMIUM_PATH ?? CANDIDATES.find((path) => existsSync(path));

/**
 * Debian's chromium, installed with apt where missing (CI runs as root with apt; Playwright's own
 * browser download needs a network these machines do not have).
 */
export function chromiumPath(): string {
  const present = found();
  if (present) return present;
  if (process.getuid?.() !== 0) {
    throw new Error(
      'chromium is not installed: run `apt-get install -y chromium` as root, or set CHROMIUM_PATH',
    );
  }
  console.log('installing chromium with apt-get (once)');
  execFileSync('apt-get', ['update'], { stdio: 'inherit', timeout: 300_000 });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    stdio: 'inherit',
    timeout: 600_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const installed = found();
  if (!installed) throw new Error('apt-get installed chromium but no chromium binary was found');
  return installed;
}
