import { mount } from "./ui/mount";

/**
 * The Admission sidebar's editor code, built into resources/admission-sidebar.js
 * (scripts/build.js), which plugins/admission-sidebar.html loads: it mounts
 * the tab when the plugin is added and takes it away when the package is
 * removed from the palette.
 */
const api = { mount };

declare global {
  interface Window { SendgateAdmission?: typeof api }
}

window.SendgateAdmission = api;
