// Renders media/rollout-lab-icon.svg to the 128×128 PNG the marketplace and the Extensions view show
// (package.json "icon" must be a PNG). Run after editing the SVG: node scripts/renderIcon.mjs
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const svg = readFileSync('media/rollout-lab-icon.svg', 'utf8');
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 128, height: 128 } });
  await page.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
  await page.locator('svg').screenshot({ path: 'media/rollout-lab-icon.png', omitBackground: true });
} finally {
  await browser.close();
}
