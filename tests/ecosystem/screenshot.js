// A page of a running Home Assistant as a PNG, through Debian's chromium driven by
// playwright-core: node screenshot.js URL OUT.png "TEXT" ["TEXT" ...]. Logs in on
// HA's login page as a person does (HA_USERNAME, HA_PASSWORD), then waits until
// every TEXT is shown (Playwright's text locators see into HA's shadow DOM), so a
// login page or a spinner is never what gets saved. Exit status 1 on a timeout.
const { chromium } = require(process.env.PLAYWRIGHT_CORE);
(async () => {
  const [url, out, ...texts] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // Only HA itself: the frontend would fetch brand icons from the internet.
    const own = new URL(url).origin;
    await page.route("**/*", (route) =>
      route.request().url().startsWith(own) ? route.continue() : route.abort());
    await page.goto(url);
    await page.getByLabel("Username").fill(process.env.HA_USERNAME, { timeout: 60000 });
    await page.keyboard.press("Tab");  // to the password field
    await page.keyboard.type(process.env.HA_PASSWORD);
    await page.keyboard.press("Enter");
    try {
      for (const text of texts) {
        await page.getByText(text, { exact: true }).first().waitFor({ timeout: 60000 });
      }
    } catch (error) {
      await page.screenshot({ path: out.replace(/\.png$/, ".failed.png") }); // what it showed
      throw error;
    }
    await page.waitForTimeout(1500); // the cards' last values and icons
    await page.screenshot({ path: out });
  } finally {
    await browser.close();
  }
})().catch((error) => { console.error(error); process.exit(1); });
