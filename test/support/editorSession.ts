import { rmSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "./chromium";
import type { NodeRedProcess } from "./nodeRedProcess";

/**
 * A browser suite's Node-RED process and Chromium: both started before the
 * suite's tests and stopped after them, with the suite's temp dir removed.
 * Returns how a test opens a fresh page.
 */
export function editorSession(red: NodeRedProcess, dir: string): (viewport: { width: number; height: number }) => Promise<Page> {
  let browser: Browser | undefined;
  before(async () => {
    await red.start();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await red.stop();
    red.cleanUp();
    rmSync(dir, { recursive: true, force: true });
  });
  return (viewport) => {
    if (!browser) throw new Error("the browser is not started: open pages in the suite's tests or hooks");
    return browser.newPage({ viewport });
  };
}
