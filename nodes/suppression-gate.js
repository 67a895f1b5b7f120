module.exports = require("../dist/src/nodes/suppressionGate").default;
