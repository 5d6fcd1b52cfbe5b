// The console's user journeys in Debian's chromium, driven by playwright-core,
// against the stack `make dev` runs (scripts/console.sh test starts it).
// Each journey fails on a browser console error, a page error, a failed or
// unexpected 4xx/5xx request, a request to another origin, or a serious or
// critical axe-core violation on any page it checks. Waits are on
// conditions (an element, a text), never on time.
//   BERTH_URL, BERTH_ADMIN_EMAIL, BERTH_ADMIN_PASSWORD, BERTH_SCREENSHOTS (a directory)
import { createRequire } from "node:module";
import { readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const BASE = process.env.BERTH_URL;
const SHOTS = process.env.BERTH_SCREENSHOTS;
const ADMIN = process.env.BERTH_ADMIN_EMAIL;
let adminPassword = process.env.BERTH_ADMIN_PASSWORD;
const NEW_PASSWORD = process.env.BERTH_NEW_PASSWORD ?? "correct horse battery staple";
// What a rollout may take on a loaded machine: a bound, not a wait.
const LONG = 120_000;
if (SHOTS) mkdirSync(SHOTS, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.BERTH_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});

/** A fresh browser context (its own cookies) watched for what fails a journey. */
async function session(name) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const failures = [];
  const expected = []; // [method, path RegExp, status]
  page.on("console", (message) => {
    // A failed request's console line is judged by its response below.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      failures.push(`console error: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => failures.push(`page error: ${error.message}`));
  page.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(BASE + "/") && !url.startsWith("data:")) failures.push(`request to another origin: ${url}`);
  });
  page.on("requestfailed", (request) => {
    const why = request.failure()?.errorText ?? "";
    // A poll cut short by navigating away is not a failure.
    if (!/ERR_ABORTED/.test(why)) failures.push(`request failed: ${request.method()} ${request.url()} ${why}`);
  });
  page.on("response", (response) => {
    const status = response.status();
    if (status < 400) return;
    const method = response.request().method();
    const path = new URL(response.url()).pathname;
    const index = expected.findIndex(([m, p, s]) => m === method && p.test(path) && s === status);
    if (index >= 0) expected.splice(index, 1);
    else failures.push(`unexpected answer ${status} to ${method} ${path}`);
  });
  const watched = {
    page,
    context,
    name,
    /** The next answer to METHOD PATH is STATUS, and that is fine. */
    expect(method, path, status) {
      expected.push([method, path, status]);
    },
    check() {
      if (failures.length) throw new Error(`${name}:\n  ${failures.join("\n  ")}`);
    },
  };
  return watched;
}

/** Runs axe-core in the page: fails on serious or critical violations. */
async function axe(s, what) {
  await s.page.evaluate(AXE);
  const violations = await s.page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join("; ")}`);
  });
  if (violations.length) throw new Error(`axe on ${what}:\n  ${violations.join("\n  ")}`);
}

async function shot(s, name) {
  if (!SHOTS) return;
  await s.page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Waits until the page's main text contains TEXT. */
async function sees(s, text, timeout) {
  await s.page.locator("main").getByText(text, { exact: false }).first().waitFor({ timeout });
}

async function heading(s, text) {
  await s.page.getByRole("heading", { level: 1, name: text }).waitFor();
}

/**
 * Waits until the sign-in page a signed-out visit is sent to is settled: the
 * redirect to /signin done and its page content focused, as every
 * navigation does a moment later (router.tsx). Typing before then loses the
 * focus to that move (a run typed the password into the Email field).
 */
async function signInShown(page) {
  await page.waitForFunction(
    () =>
      location.pathname === "/signin" &&
      document.querySelector("h1")?.textContent === "Sign in to Berth" &&
      document.activeElement?.id === "main",
  );
}

/** Presses Tab until the field labelled LABEL has the focus (at most 20 times). */
async function tabTo(s, label) {
  for (let i = 0; i < 20; i++) {
    await s.page.keyboard.press("Tab");
    const focused = await s.page.evaluate(() => {
      const e = document.activeElement;
      return e?.id ? document.querySelector(`label[for="${e.id}"]`)?.textContent : null;
    });
    if (focused === label) return;
  }
  throw new Error(`${label} cannot be reached with Tab`);
}

async function signIn(s, email, password) {
  await s.page.getByLabel("Email").fill(email);
  await s.page.getByLabel("Password", { exact: true }).fill(password);
  await s.page.getByRole("button", { name: "Sign in" }).click();
}

async function changePassword(s, current, fresh) {
  await heading(s, "Choose your password");
  await s.page.getByLabel("Current password").fill(current);
  await s.page.getByLabel("New password (12 characters or more)").fill(fresh);
  await s.page.getByLabel("New password, again").fill(fresh);
  await s.page.getByRole("button", { name: "Change password" }).click();
}

/** Clicks the form's submit button, the form found by its accessible name. */
async function submit(s, form, fields, button) {
  const f = s.page.getByRole("form", { name: form });
  for (const [label, value] of Object.entries(fields)) {
    const field = f.getByLabel(label, { exact: true });
    if ((await field.evaluate((e) => e.tagName)) === "SELECT") await field.selectOption(value);
    else await field.fill(value);
  }
  await f.getByRole("button", { name: button }).click();
}

const journeys = [];
function journey(name, run) {
  journeys.push([name, run]);
}

const state = {};

journey("sign in with a temporary password and replace it", async () => {
  const s = await session("admin");
  state.admin = s;
  s.expect("GET", /^\/api\/v1\/me$/, 401);
  const answer = await s.page.goto(BASE + "/");
  const csp = answer.headers()["content-security-policy"];
  if (!csp?.includes("frame-ancestors 'none'") || !csp.includes("default-src 'self'") || /unsafe-inline/.test(csp)) {
    throw new Error(`the page's Content-Security-Policy is not strict: ${csp}`);
  }
  await heading(s, "Sign in to Berth");
  // Sent there: the page shows the sign-in form first, and the address
  // follows in the next moment (app.tsx), so it is waited for.
  await signInShown(s.page);
  await axe(s, "sign in");
  await shot(s, "signin");
  // A wrong password: the Problem's words.
  s.expect("POST", /^\/api\/v1\/auth\/login$/, 401);
  await signIn(s, ADMIN, "not the password");
  await s.page.getByRole("alert").waitFor();
  await signIn(s, ADMIN, adminPassword);
  await changePassword(s, adminPassword, NEW_PASSWORD);
  adminPassword = NEW_PASSWORD;
  await heading(s, "Projects");
  await axe(s, "projects");
  // Signed out, then in with the new password; a reload keeps the page.
  await s.page.getByRole("button", { name: "Sign out" }).click();
  await heading(s, "Sign in to Berth");
  s.expect("GET", /^\/api\/v1\/me$/, 401);
  await s.page.goto(BASE + "/members");
  await signInShown(s.page);
  // With the keyboard alone.
  await tabTo(s, "Email");
  await s.page.keyboard.type(ADMIN);
  await s.page.keyboard.press("Tab");
  await s.page.keyboard.type(adminPassword);
  await s.page.keyboard.press("Enter");
  await heading(s, "Members");
  await s.page.reload();
  await heading(s, "Members");
  s.check();
});

journey("make a project, two environments and an app; deploy an image and see it available", async () => {
  const s = state.admin;
  await s.page.getByRole("navigation", { name: "Organization" }).getByRole("link", { name: "Projects" }).click();
  await heading(s, "Projects");
  await submit(s, "New project", { Name: "shop" }, "Create project");
  await submit(s, "New project", { Name: "other" }, "Create project");
  await s.page.getByRole("link", { name: "shop" }).first().click();
  await heading(s, "shop");
  await submit(s, "New environment", { Name: "staging" }, "Create environment");
  await sees(s, "staging");
  await submit(
    s,
    "New environment",
    { Name: "production", Type: "production", "Quota: CPU (optional)": "8", "Quota: memory (optional)": "16Gi", "Quota: pods (optional)": "50" },
    "Create environment",
  );
  await s.page.getByRole("link", { name: "production" }).waitFor();
  await s.page.locator("tr", { hasText: "staging" }).getByText("ready").waitFor({ timeout: LONG });
  await s.page.locator("tr", { hasText: "production" }).getByText("ready").waitFor({ timeout: LONG });
  await axe(s, "project");
  await shot(s, "project");
  await s.page.getByRole("link", { name: "staging" }).click();
  await heading(s, "shop / staging");
  await s.page.getByTestId("quota").getByText("No quota set: the platform's defaults apply").waitFor();
  await submit(s, "New app", { Name: "web", Image: "nginx:1.27", "Port (optional)": "8080" }, "Create app");
  await s.page.getByRole("link", { name: "web" }).waitFor();
  await s.page.locator("tr", { hasText: "web" }).getByText("available").waitFor({ timeout: LONG });
  // Its pods, from the app's own answer (the list has none).
  await s.page.getByTestId("pods-web").getByText("1/1", { exact: true }).waitFor({ timeout: LONG });
  await axe(s, "environment");
  await shot(s, "environment");
  await s.page.getByRole("link", { name: "web" }).click();
  await heading(s, "web");
  await s.page.getByTestId("app-status").getByText("available").waitFor({ timeout: LONG });
  await s.page.getByTestId("release-1").getByText("released").waitFor({ timeout: LONG });
  await submit(s, "Deploy an image", { Image: "nginx:1.28" }, "Deploy");
  await s.page.getByTestId("release-2").getByText("released").waitFor({ timeout: LONG });
  await s.page.getByTestId("app-status").getByText("available").waitFor({ timeout: LONG });
  await axe(s, "app");
  await shot(s, "app");
  s.check();
});

journey("deploy an image that fails and see the automatic rollback explained", async () => {
  const s = state.admin;
  // The stand-in never readies an image tagged crashloop; the stack's
  // progress deadline is short (scripts/console.sh).
  await submit(s, "Deploy an image", { Image: "nginx:crashloop" }, "Deploy");
  const failed = s.page.locator("tr", { hasText: "nginx:crashloop" });
  await failed.getByText("rolled back").waitFor({ timeout: LONG });
  await s.page.getByTestId("app-status").getByText("available").waitFor({ timeout: LONG });
  await s.page.getByTestId("rollout").getByText("rolled back").waitFor({ timeout: LONG });
  await shot(s, "app-rolled-back");
  s.check();
});

journey("roll back by hand; promote", async () => {
  const s = state.admin;
  s.page.once("dialog", (dialog) => dialog.accept());
  await s.page.getByRole("button", { name: "Roll back to 1" }).click();
  const current = s.page.locator("tr", { hasText: "(current)" });
  await current.getByText("nginx:1.27").waitFor({ timeout: LONG });
  await current.getByText("released").waitFor({ timeout: LONG });
  await submit(s, "Promote", { "Promote this app's image and settings to environment": "production" }, "Promote");
  await s.page.getByRole("navigation", { name: "Breadcrumb" }).getByRole("link", { name: "shop" }).click();
  await s.page.getByRole("link", { name: "production" }).click();
  await heading(s, "shop / production");
  await s.page.getByTestId("quota").getByText("Quota: CPU 8, memory 16Gi, pods 50;").waitFor();
  await s.page.locator("tr", { hasText: "web" }).getByText("nginx:1.27").waitFor({ timeout: LONG });
  s.check();
});

journey("delete the production environment and restore it during its grace", async () => {
  const s = state.admin;
  s.page.once("dialog", (dialog) => dialog.accept());
  await s.page.getByRole("button", { name: "Delete this environment" }).click();
  await sees(s, "purged at");
  await axe(s, "a deleted production environment");
  await s.page.getByRole("button", { name: "Restore this environment" }).click();
  await s.page.getByRole("button", { name: "Delete this environment" }).waitFor({ timeout: LONG });
  await s.page.locator("tr", { hasText: "web" }).getByText("available").waitFor({ timeout: LONG });
  s.check();
});

journey("set a secret and reference it from the app's env", async () => {
  const s = state.admin;
  await s.page.goto(BASE + "/projects/shop/environments/staging");
  await heading(s, "shop / staging");
  await submit(s, "Set a secret", { "Secret name": "database", "Keys and values, one KEY=value a line": "url=postgres://db.internal/shop\npassword=hunter2-very-secret" }, "Save secret");
  await s.page.locator("tr", { hasText: "database" }).getByText("url").waitFor();
  if ((await s.page.content()).includes("hunter2-very-secret")) throw new Error("a secret's value is on the page");
  // How soon an app's page shows its status (reported, not a pass mark):
  // from a link within the console, and from a fresh load of its address.
  let started = Date.now();
  await s.page.getByRole("link", { name: "web" }).click();
  await s.page.getByTestId("app-status").waitFor();
  const byLink = Date.now() - started;
  started = Date.now();
  await s.page.goto(BASE + "/projects/shop/environments/staging/apps/web");
  await s.page.getByTestId("app-status").waitFor();
  console.log(`     an app's status shown ${byLink} ms after following a link, ${Date.now() - started} ms after loading its address`);
  await heading(s, "web");
  await submit(s, "Set a variable", { Name: "DATABASE_URL", "Or from a secret (secret/key)": "database/url" }, "Set variable");
  await s.page.getByTestId("env-DATABASE_URL").getByText("from secret").waitFor();
  await submit(s, "Set a variable", { Name: "GREETING", Value: "hello" }, "Set variable");
  await s.page.getByTestId("env-GREETING").getByText("hello").waitFor();
  s.check();
});

journey("follow logs while a pod restarts", async () => {
  const s = state.admin;
  await s.page.getByRole("button", { name: "Follow logs" }).click();
  const logs = s.page.getByTestId("logs");
  await logs.filter({ hasText: /web-/ }).waitFor({ timeout: LONG });
  const before = await logs.textContent();
  const podsBefore = new Set(before.match(/\bweb-[a-z0-9-]+/g));
  await s.page.getByRole("button", { name: "Restart" }).click();
  // A line from a pod not seen before: the restarted one.
  await s.page.waitForFunction(
    (seen) => {
      const text = document.querySelector("[data-testid=logs]")?.textContent ?? "";
      return (text.match(/\bweb-[a-z0-9-]+/g) ?? []).some((pod) => !seen.includes(pod));
    },
    [...podsBefore],
    { timeout: LONG },
  );
  await s.page.getByRole("button", { name: "Stop following" }).click();
  s.check();
});

journey("make a deploy token and see it shown once", async () => {
  const s = state.admin;
  await s.page.goto(BASE + "/projects/shop/tokens");
  await heading(s, "shop: deploy tokens");
  await submit(s, "New deploy token", { Name: "ci" }, "Create deploy token");
  const secret = await s.page.getByTestId("shown-once").textContent();
  if (!secret?.startsWith("brd_")) throw new Error(`not a deploy token: ${secret}`);
  await axe(s, "deploy tokens");
  await shot(s, "deploy-tokens");
  await s.page.getByRole("button", { name: "I have kept it" }).click();
  await s.page.locator("tr", { hasText: "ci" }).waitFor();
  await s.page.reload();
  await heading(s, "shop: deploy tokens");
  await s.page.locator("tr", { hasText: "ci" }).waitFor();
  if ((await s.page.content()).includes(secret)) throw new Error("the deploy token is shown again");
  s.check();
});

journey("invite a member with a role in one project only; they see only that project, values hidden", async () => {
  const s = state.admin;
  await s.page.goto(BASE + "/members");
  await heading(s, "Members");
  await submit(
    s,
    "Invite a member",
    { Email: "viewer@example.com", "Role in the organization": "member", "Also a role in project (optional)": "shop", "Project role": "viewer" },
    "Invite",
  );
  const temporary = await s.page.getByTestId("shown-once").textContent();
  await axe(s, "members");
  await shot(s, "members");
  await s.page.getByRole("button", { name: "I have kept it" }).click();
  await s.page.locator("tr", { hasText: "viewer@example.com" }).getByText("shop: viewer").waitFor();

  const v = await session("viewer");
  v.expect("GET", /^\/api\/v1\/me$/, 401);
  await v.page.goto(BASE + "/");
  await heading(v, "Sign in to Berth");
  await signIn(v, "viewer@example.com", temporary);
  await changePassword(v, temporary, "another long passphrase");
  await heading(v, "Projects");
  await v.page.getByRole("link", { name: "shop" }).waitFor();
  if (await v.page.getByRole("link", { name: "other" }).count()) throw new Error("the viewer sees a project they have no role in");
  await v.page.goto(BASE + "/projects/shop/environments/staging/apps/web");
  await heading(v, "web");
  await v.page.getByTestId("env-GREETING").getByText("hidden").waitFor();
  if ((await v.page.content()).includes("hello")) throw new Error("a value is shown to a member without secret-read");
  await axe(v, "app, as a viewer");
  // The actions a viewer's role lacks are not offered, once the API tells
  // what the caller may do (getCurrentUser's `access`).
  const access = await v.page.evaluate(async () => (await (await fetch("/api/v1/me")).json()).access);
  if (access) {
    for (const action of ["Deploy", "Restart", "Set variable", "Promote"]) {
      if (await v.page.getByRole("button", { name: action, exact: true }).count()) throw new Error(`a viewer is offered ${action}`);
    }
    await v.page.goto(BASE + "/projects/shop/environments/staging");
    await heading(v, "shop / staging");
    if (await v.page.getByRole("form", { name: "Set a secret" }).count()) throw new Error("a viewer is offered to set a secret");
    if (await v.page.getByRole("form", { name: "New app" }).count()) throw new Error("a viewer is offered to create an app");
  } else {
    console.log("     (getCurrentUser does not tell the caller's access yet: the viewer's hidden actions are not checked)");
  }
  v.check();
  await v.context.close();
  s.check();
});

journey("the audit log; the templates, deploying one", async () => {
  const s = state.admin;
  await s.page.goto(BASE + "/audit");
  await heading(s, "Audit log");
  await s.page.locator("tbody tr").first().waitFor();
  await axe(s, "audit log");
  await shot(s, "audit");
  // Filtered by project: its own address, kept by a reload.
  await s.page.getByLabel("Project", { exact: true }).selectOption("shop");
  await s.page.waitForURL(/\/audit\?project=shop$/);
  await s.page.locator("tbody tr").first().waitFor();
  await s.page.reload();
  await s.page.locator("tbody tr").first().waitFor();
  if ((await s.page.getByLabel("Project", { exact: true }).inputValue()) !== "shop") throw new Error("the project filter is lost on reload");
  // Filtered by action too (listAuditEvents' own filter), the project kept.
  await s.page.getByLabel("Action (operation id)").fill("createEnvironment");
  await s.page.getByRole("button", { name: "Filter", exact: true }).click();
  await s.page.waitForURL(/\/audit\?project=shop&action=createEnvironment$/);
  await s.page.locator("tbody tr").first().waitFor();
  const actions = await s.page.locator("tbody tr td:nth-child(3)").allTextContents();
  if (actions.length === 0 || actions.some((action) => action !== "createEnvironment")) {
    throw new Error(`the action filter let through: ${actions.join(", ")}`);
  }
  await axe(s, "audit log, filtered");
  await s.page.goto(BASE + "/templates");
  await heading(s, "Templates");
  await s.page.locator(".cards li").first().waitFor();
  await axe(s, "templates");
  await shot(s, "templates");
  // Deploying one: the app's page, where it becomes available.
  await s.page.getByRole("button", { name: "Deploy nginx", exact: true }).click();
  await submit(s, "Deploy nginx", { Project: "shop", Environment: "staging", "App name (empty: nginx)": "site" }, "Deploy");
  await heading(s, "site");
  await s.page.getByTestId("app-status").getByText("available").waitFor({ timeout: LONG });
  s.check();
});

journey("an app from a git repository: its build, its state and its logs", async () => {
  const s = state.admin;
  await s.page.goto(BASE + "/projects/shop/environments/staging");
  await heading(s, "shop / staging");
  // The stand-in runs no build step and fetches nothing: its kubelet ends a
  // build's pod with what a build reports (a commit and a digest of its
  // own), so the build succeeds and its image becomes the app's revision.
  await submit(s, "New app", { Name: "api", "Or a git repository": "https://git.example.com/shop/api.git", "Port (optional)": "8080" }, "Create app");
  await s.page.getByRole("link", { name: "api", exact: true }).click();
  await heading(s, "api");
  const build = s.page.getByRole("table", { name: "Builds" }).locator("tbody tr").first();
  await build.getByText("succeeded").waitFor({ timeout: LONG });
  await s.page.getByRole("button", { name: "Show logs of build 1" }).click();
  // One part per container of the build's pod, each headed by its name.
  await s.page.getByLabel("Logs of build 1", { exact: true }).filter({ hasText: /^— \S+/ }).waitFor({ timeout: LONG });
  // Revision 1 is the app made, awaiting its build; the build's image is revision 2.
  await build.locator("td").nth(3).getByText("2", { exact: true }).waitFor();
  await s.page.getByTestId("release-2").getByText("released").waitFor({ timeout: LONG });
  await s.page.getByTestId("app-status").getByText("available").waitFor({ timeout: LONG });
  await axe(s, "app from git, its build's logs shown");
  await shot(s, "app-build");
  await s.page.getByRole("button", { name: "Hide logs of build 1" }).click();
  s.check();
});

journey("add a domain and see its DNS, verification and certificate", async () => {
  const s = state.admin;
  await s.page.goto(BASE + "/projects/shop/environments/staging/apps/web");
  await heading(s, "web");
  await s.page.getByText("None: the app answers at its URL above.").waitFor();
  await submit(s, "Add a domain", { Hostname: "www.shop-example.com" }, "Add domain");
  const row = s.page.getByTestId("domain-www.shop-example.com");
  // No TXT record proves it here: pending, the record to publish shown.
  await row.getByText("pending").first().waitFor({ timeout: LONG });
  await row.getByText("_berth-challenge.www.shop-example.com", { exact: true }).waitFor();
  await row.getByText(/^(points here|not yet)$/).waitFor();
  const certificate = (await row.locator("td").nth(3).locator(".badge").textContent())?.trim();
  if (!["pending", "issued", "expiring", "expired", "invalid", "none"].includes(certificate)) throw new Error(`no certificate state: ${certificate}`);
  await axe(s, "app with a domain");
  await shot(s, "app-domain");
  s.page.once("dialog", (dialog) => dialog.accept());
  await s.page.getByRole("button", { name: "Remove www.shop-example.com" }).click();
  await s.page.getByText("None: the app answers at its URL above.").waitFor({ timeout: LONG });
  s.check();
});

journey("run a scheduled process now and see its job started", async () => {
  const s = state.admin;
  // The console makes an app from an image; one with a scheduled process is
  // made through the API, as the CLI would (the page's session, same origin).
  const created = await s.page.evaluate(async () => {
    const answer = await fetch("/api/v1/projects/shop/environments/staging/apps", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        name: "reports",
        image: "busybox:1.37",
        processes: [
          { name: "web", command: ["httpd", "-f", "-p", "8080"], port: 8080 },
          { name: "nightly", schedule: "0 3 * * *", command: ["sh", "-c", "echo report"] },
        ],
      }),
    });
    return `${answer.status} ${await answer.text()}`;
  });
  if (!created.startsWith("201 ")) throw new Error(`the app was not made: ${created}`);
  await s.page.goto(BASE + "/projects/shop/environments/staging/apps/reports");
  await heading(s, "reports");
  await s.page.locator("tr", { hasText: "nightly" }).getByText("(0 3 * * *)").waitFor();
  await s.page.getByTestId("app-status").getByText("available").waitFor({ timeout: LONG });
  await s.page.getByRole("button", { name: "Run nightly now" }).click();
  const started = s.page.getByTestId("run-started");
  await started.waitFor();
  const job = (await started.locator("code").textContent())?.trim();
  if (!job?.startsWith("reports-nightly")) throw new Error(`not the process's job: ${job}`);
  // The controller makes the Job; its pod shows among the app's.
  await s.page.locator("tr", { hasText: job }).first().waitFor({ timeout: LONG });
  await axe(s, "app with a scheduled process, run");
  await shot(s, "app-run");
  s.check();
});

journey("sign out while the page's requests are on their way: none is refused", async () => {
  // A session of its own, so that the admin's stays signed in.
  const s = await session("sign-out");
  s.expect("GET", /^\/api\/v1\/me$/, 401);
  await s.page.goto(BASE + "/");
  await signInShown(s.page);
  await signIn(s, ADMIN, NEW_PASSWORD);
  await heading(s, "Projects");
  // The app page's domain check is held on its way while the user signs out.
  let release;
  const held = new Promise((resolve) => (release = resolve));
  let holding;
  const isHeld = new Promise((resolve) => (holding = resolve));
  await s.page.route("**/apps/web/domains", async (route) => {
    holding();
    await held;
    await route.continue();
  });
  const order = [];
  s.page.on("request", (request) => {
    if (new URL(request.url()).pathname === "/api/v1/auth/logout") order.push("logout sent");
  });
  s.page.on("response", (response) => {
    if (new URL(response.url()).pathname.endsWith("/apps/web/domains")) order.push("check answered");
  });
  await s.page.goto(BASE + "/projects/shop/environments/staging/apps/web");
  await heading(s, "web");
  await isHeld;
  await s.page.getByRole("button", { name: "Sign out" }).click();
  // The page is gone; the session ends only once its last request is answered.
  await s.page.getByText("Signing out…").waitFor();
  if (order.length) throw new Error(`before the check was answered: ${order.join(", ")}`);
  release();
  await signInShown(s.page);
  if (order.join(", ") !== "check answered, logout sent") throw new Error(`in this order: ${order.join(", ")}`);
  s.check();
  await s.context.close();
});

let failed = 0;
for (const [name, run] of journeys) {
  const started = Date.now();
  try {
    await run();
    console.log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}\n${String(error.stack ?? error).replace(/^/gm, "     ")}`);
    if (SHOTS && state.admin) await state.admin.page.screenshot({ path: join(SHOTS, `failed-${journeys.findIndex(([n]) => n === name)}.png`), fullPage: true }).catch(() => {});
    break; // the later journeys build on this one
  }
}
await browser.close();
if (failed) process.exit(1);
console.log(`${journeys.length} journeys passed`);
