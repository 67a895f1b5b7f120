module.exports = require("../dist/src/nodes/throughputGate").default;
