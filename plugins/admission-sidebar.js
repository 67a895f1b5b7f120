module.exports = require("../dist/src/nodes/admissionPlugin").default;
