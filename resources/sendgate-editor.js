/*
 * Editor code shared by the sendgate gates' edit dialogs (frequency cap,
 * suppression, quiet hours). Node-RED serves this package's `resources/` folder
 * to the editor; each gate's HTML loads this file with
 *   <script src="resources/@sendgate/node-red-frequency-cap/sendgate-editor.js"></script>
 * and the editor runs it before that gate's own script, so `SendgateEditor` is
 * there when the gate registers its type.
 *
 * Only the dialogs' runtime code lives here: each gate still writes its
 * `defaults` out in its own registerType.
 */
(function () {
    "use strict";

    // Every send field is a TypedInput pair `<field>` / `<field>Type` (SPEC §2).
    var FIELD_TYPES = ["msg", "flow", "global", "env", "jsonata", "str"];
    var LABELS = {
        recipient: "Recipient",
        channel: "Channel",
        category: "Category",
        tier: "Tier",
        messageId: "Message id",
        org: "Org",
        attributes: "Attributes",
        recipientLimits: "Own limits",
        timezone: "Time zone",
        expiresAt: "Expires at",
        body: "Body"
    };
    // Where the rows go in a gate's template.
    var PLACEHOLDER = /<div class="sendgate-field-pairs"><\/div>/;

    function defaultPathOf(field, defaultPaths) {
        return (defaultPaths && defaultPaths[field]) || field;
    }

    /** The `defaults` entry of a send field: msg.<field> (or the given path), checked as a TypedInput. */
    function sourceOf(field, defaultPath) {
        return {
            value: defaultPath || field,
            label: field,
            validate: RED.validators.typedInput({ typeField: field + "Type" })
        };
    }

    /** Whole seconds from `min`, or absent: a flow that leaves it out takes the runtime's default. */
    function secondsOrAbsent(min, message) {
        return function (v, opt) {
            if (v === undefined || v === null || v === "") { return true; }
            var n = Number(v);
            if (isFinite(n) && Math.floor(n) === n && n >= min) { return true; }
            return opt ? message : false;
        };
    }

    function rowsHtml(fields) {
        var html = '<div class="form-row" style="margin-top: 16px;">' +
            '<label style="width: auto;"><i class="fa fa-envelope-o"></i> <b>Read the send from</b></label>' +
            "</div>";
        fields.forEach(function (field) {
            html += '<div class="form-row">' +
                '<label for="node-input-' + field + '">' + (LABELS[field] || field) + "</label>" +
                ' <input type="text" id="node-input-' + field + '" style="width: 70%;">' +
                ' <input type="hidden" id="node-input-' + field + 'Type">' +
                "</div>";
        });
        return html;
    }

    /**
     * Writes the "Read the send from" rows into the gate's edit template, in
     * place of its `<div class="sendgate-field-pairs"></div>`. Done once, when
     * the gate registers, so the inputs are there when the editor fills them
     * from the node and watches them for validation, as for any hand-written row.
     */
    function fieldRows(type, fields) {
        var template = $("script[data-template-name='" + type + "']");
        if (template.length === 0 || !PLACEHOLDER.test(template.html())) { return; }
        template.html(template.html().replace(PLACEHOLDER, rowsHtml(fields)));
    }

    /**
     * For oneditprepare: each field's TypedInput, showing msg.<field> (or the
     * given default path) when the node leaves the pair out.
     */
    function fieldPairs(node, fields, defaultPaths) {
        fields.forEach(function (field) {
            var input = $("#node-input-" + field);
            var typeInput = $("#node-input-" + field + "Type");
            if (!node[field]) { input.val(defaultPathOf(field, defaultPaths)); }
            if (!node[field + "Type"]) { typeInput.val("msg"); }
            input.typedInput({
                default: "msg",
                types: FIELD_TYPES,
                typeField: typeInput
            });
        });
    }

    window.SendgateEditor = {
        FIELD_TYPES: FIELD_TYPES,
        sourceOf: sourceOf,
        secondsOrAbsent: secondsOrAbsent,
        fieldRows: fieldRows,
        fieldPairs: fieldPairs
    };
})();
