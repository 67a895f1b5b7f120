import { capConfig } from "./capConfig";
import { frequencyCapGate } from "./frequencyCapGate";
import { gateFields } from "./gateFields";
import { quietHoursGate } from "./quietHoursGate";
import { sendFieldValidator, writeFieldRows } from "./sendFields";
import { addStyles } from "./styles";
import { suppressionGate } from "./suppressionGate";
import { throughputGate } from "./throughputGate";

/**
 * The editor side of every node of the package, loaded by each node's HTML
 * (resources/sendgate-editor.js, built from src/editor). The HTML files keep
 * only their templates and registerType, which refers to this object.
 */
const api = {
  capConfig,
  frequencyCapGate,
  suppressionGate,
  quietHoursGate,
  throughputGate,
  sendField: sendFieldValidator,
};

declare global {
  interface Window { SendgateEditor?: typeof api }
}

// every node's HTML loads this file; once is enough
if (!window.SendgateEditor) {
  window.SendgateEditor = api;
  addStyles();
  // a gate's send-field rows go into its template as soon as the gate is registered, before any dialog opens
  RED.events.on("registry:node-type-added", (type) => {
    if (typeof type === "string" && type in gateFields) writeFieldRows(type, gateFields[type as keyof typeof gateFields]);
  });
}
