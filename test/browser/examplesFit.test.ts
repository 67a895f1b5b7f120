import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../support/chromium";
import { demoScript, exampleNames, readExample, type FlowNode } from "../support/exampleFlow";
import { NodeRedProcess } from "../support/nodeRedProcess";

/** The editor's global, as the page.evaluate callbacks below see it. */
declare const RED: {
  workspaces: { show(id: string): void };
  nodes: { filterNodes(filter: { z: string }): { id: string; type: string; name?: string; x: number; y: number; w: number; h: number }[] };
};

/** What sticks out of a node's box: the inject's button on its left, the debug's on its right. */
const BUTTON = 25;

/**
 * Every example, and the `npm start` demo, in the editor of a 1,600 × 1,000
 * window with the palette and the sidebar open, as the editor first opens:
 * every node of each tab, measured by the editor itself (its own widths), is
 * inside the canvas the window shows, nothing to scroll to.
 */
describe("every example fits the canvas of a 1,600-px editor with its palette and sidebar open [browser]", function () {
  this.timeout(180_000);
  const flows: [string, FlowNode[]][] = [...exampleNames().map((name): [string, FlowNode[]] => [name, readExample(name)]), ["the npm start demo", demoScript.demoFlow()]];
  const dir = mkdtempSync(join(tmpdir(), "sendgate-fit-"));
  const flowFile = join(dir, "flows.json");
  writeFileSync(flowFile, JSON.stringify(flows.flatMap(([, flow]) => flow)));
  const red = new NodeRedProcess(flowFile);
  let browser: Browser;
  let page: Page;

  before(async () => {
    await red.start();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(red.baseUrl);
    await page.waitForSelector(".red-ui-flow-node", { timeout: 60_000 });
  });
  after(async () => {
    await browser?.close();
    await red.stop();
    red.cleanUp();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [name, flow] of flows) {
    it(`${name}: every node within the canvas shown, palette and sidebar open`, async () => {
      const tab = flow.find((n) => n.type === "tab") as FlowNode;
      await page.evaluate((id) => RED.workspaces.show(id), tab.id);
      await page.waitForTimeout(300);
      const seen = await page.evaluate((id) => {
        const chart = document.getElementById("red-ui-workspace-chart") as HTMLElement;
        const sidebar = document.getElementById("red-ui-sidebar") as HTMLElement;
        const palette = document.getElementById("red-ui-palette") as HTMLElement;
        return {
          width: chart.clientWidth, height: chart.clientHeight, scrolled: [chart.scrollLeft, chart.scrollTop],
          open: [palette.offsetWidth > 0, sidebar.offsetWidth > 0],
          nodes: RED.nodes.filterNodes({ z: id }).map((n) => ({ type: n.type, name: n.name ?? "", x: n.x, y: n.y, w: n.w, h: n.h })),
        };
      }, tab.id);
      assert.deepEqual(seen.open, [true, true], "the palette and the sidebar are open");
      assert.deepEqual(seen.scrolled, [0, 0]);
      assert.ok(seen.width >= 1000, `the canvas is ${seen.width} px wide`);
      assert.equal(seen.nodes.length, flow.filter((n) => n.type !== "tab" && typeof n.x === "number").length, "every node is drawn");
      for (const n of seen.nodes) {
        const left = n.x - n.w / 2 - (n.type === "inject" ? BUTTON : 0);
        const right = n.x + n.w / 2 + (n.type === "debug" ? BUTTON : 0);
        assert.ok(left >= 0, `${n.type} "${n.name}" starts at x ${left}, left of the canvas`);
        assert.ok(right <= seen.width, `${n.type} "${n.name}" reaches x ${right}: past the ${seen.width} px the canvas shows`);
        assert.ok(n.y + n.h / 2 <= seen.height, `${n.type} "${n.name}" reaches y ${n.y + n.h / 2}: below the ${seen.height} px the canvas shows`);
      }
    });
  }
});
