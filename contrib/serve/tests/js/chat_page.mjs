// Drives tether serve's chat page in headless Chromium (playwright-core, the system's
// Chromium): types a prompt, waits for the streamed answer, clicks Approve on the pending
// call and waits for the result. Prints what the page showed, as JSON.
// Usage: node chat_page.mjs URL CHROMIUM_PATH
import { chromium } from "playwright-core";

const [url, executablePath] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
const out = {};
try {
  const page = await browser.newPage();
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(url);
  await page.fill("#prompt", "Deploy it please");
  await page.press("#prompt", "Enter");
  await page.waitForSelector("button.decide.allow", { timeout: 20000 });
  out.firstAnswer = await page.textContent(".msg.assistant .answer");
  out.strong = await page.textContent(".msg.assistant .answer strong");
  out.injectedImages = await page.locator(".msg.assistant img").count();
  await page.click("button.decide.allow");
  await page.waitForFunction(
    () => [...document.querySelectorAll(".msg.assistant .answer")].some((n) => n.textContent.includes("Result:")),
    null,
    { timeout: 20000 },
  );
  out.answers = await page.$$eval(".msg.assistant .answer", (nodes) => nodes.map((n) => n.textContent));
  out.toolRows = await page.$$eval(".tools .call", (nodes) => nodes.map((n) => n.textContent));
  out.cost = await page.textContent("#cost");
  await page.waitForSelector("#sessions button.session", { timeout: 20000 });
  out.sessions = await page.$$eval("#sessions button.session", (nodes) => nodes.map((n) => n.textContent));
  out.foreignRequests = requests.filter((r) => !r.startsWith(url.replace(/\/$/, "")));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
