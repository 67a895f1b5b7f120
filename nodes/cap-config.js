module.exports = require("../dist/src/nodes/capConfig").default;
