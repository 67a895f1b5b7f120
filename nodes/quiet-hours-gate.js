module.exports = require("../dist/src/nodes/quietHoursGate").default;
