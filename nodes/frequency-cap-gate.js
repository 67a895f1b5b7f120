module.exports = require("../dist/src/nodes/frequencyCapGate").default;
