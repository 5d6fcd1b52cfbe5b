// One journey in Debian's firefox-esr, driven by puppeteer-core over
// WebDriver BiDi (docs/console.md): sign in with the keyboard, open an app
// and see its status, follow a link back, sign out. Run by
// scripts/console.sh test after the chromium journeys, on the same stack
// (the admin's password is the one they chose). Fails on a console error,
// a page error, a failed request, or an answer of 400 or more other than
// the signed-out visitor's /api/v1/me.
//   BERTH_URL, BERTH_ADMIN_EMAIL, BERTH_NEW_PASSWORD
import puppeteer from "puppeteer-core";

const BASE = process.env.BERTH_URL;
const browser = await puppeteer.launch({
  browser: "firefox",
  executablePath: process.env.BERTH_FIREFOX ?? "/usr/bin/firefox-esr",
  headless: true,
  protocol: "webDriverBiDi",
});
const failures = [];
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  page.on("console", (message) => {
    if (message.type() === "error") failures.push(`console error: ${message.text()}`);
  });
  page.on("pageerror", (error) => failures.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) => failures.push(`request failed: ${request.method()} ${request.url()}`));
  page.on("response", (response) => {
    const path = new URL(response.url()).pathname;
    if (response.status() >= 400 && !(path === "/api/v1/me" && response.status() === 401)) {
      failures.push(`unexpected answer ${response.status()} to ${response.request().method()} ${path}`);
    }
  });
  await page.goto(`${BASE}/projects/shop/environments/staging/apps/web`);
  // The redirect to /signin done and its content focused (router.tsx), so
  // that the focus moved to the field below stays there.
  await page.waitForFunction(
    () =>
      location.pathname === "/signin" &&
      document.querySelector("h1")?.textContent === "Sign in to Berth" &&
      document.activeElement?.id === "main",
  );
  await page.focus("input[type=email]");
  await page.keyboard.type(process.env.BERTH_ADMIN_EMAIL);
  await page.keyboard.press("Tab");
  await page.keyboard.type(process.env.BERTH_NEW_PASSWORD);
  await page.keyboard.press("Enter");
  // Back on the page asked for, its status shown.
  await page.waitForFunction(() => document.querySelector("[data-testid=app-status]")?.textContent.includes("available"));
  await page.waitForFunction(() => document.querySelector("h1")?.textContent === "web");
  // A link within the console, then back.
  await page.evaluate(() => [...document.querySelectorAll("nav[aria-label=Breadcrumb] a")].find((a) => a.textContent === "staging").click());
  await page.waitForFunction(() => document.querySelector("h1")?.textContent === "shop / staging");
  await page.goBack();
  await page.waitForFunction(() => document.querySelector("h1")?.textContent === "web");
  await page.evaluate(() => [...document.querySelectorAll("button")].find((b) => b.textContent === "Sign out").click());
  await page.waitForFunction(() => document.querySelector("h1")?.textContent === "Sign in to Berth");
} finally {
  await browser.close();
}
if (failures.length) {
  console.log(`FAIL firefox-esr: sign in, an app's status, back, sign out\n     ${failures.join("\n     ")}`);
  process.exit(1);
}
console.log("ok   firefox-esr: sign in with the keyboard, an app's status, back and forward, sign out");
