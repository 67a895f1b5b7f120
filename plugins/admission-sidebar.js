module.exports = require("../dist/src/nodes/admissionSidebar").default;
