/*
 * The Admission sidebar (editor plugin `sendgate-admission-sidebar`,
 * plugins/admission-sidebar.html): for each gate of the open flows, what it
 * allowed, skipped (by reason) and deferred over the last five minutes, the
 * msgs its cap-config holds, fail-open events and what shadow caps would have
 * refused, pushed by the runtime over the editor's websocket (topic
 * `sendgate/admission/<cap-config id>`, src/nodes/admissionFeed.ts); and an
 * inspector that reads a recipient's usage of every cap through the admin
 * API (`GET frequency-cap/:config/usage`) with the editor's own credentials.
 *
 * Every text comes from plugins/locales/<lang>/admission-sidebar.json; the
 * pure part (`model`) takes the translate function and is also loaded by the
 * tests in Node.
 */
(function (root) {
    "use strict";

    var TOPIC = "sendgate/admission";
    /** the plugin's message catalog (Node-RED names it after the module and the plugin file) */
    var CATALOG = "@sendgate/node-red-frequency-cap/admission-sidebar";
    var WINDOW_MS = 5 * 60 * 1000;
    var COLORS = { allowed: "#3c9a5f", skipped: "#d0543e", deferred: "#3b7fc4", errors: "#8a3ab9" };

    // ---- model: plain data in, plain data out --------------------------------

    function sum(list, pick) {
        var total = 0;
        for (var i = 0; i < list.length; i++) { total += pick(list[i]) || 0; }
        return total;
    }

    /**
     * A gate's last `windowMs` (to `now`, the runtime's clock): the counts of
     * the buckets in it, skipped by reason (most first), and one bar per
     * bucket slot, oldest first (empty slots are zero).
     */
    function summarize(gate, now, windowMs, bucketMs) {
        var slots = Math.max(1, Math.round(windowMs / bucketMs));
        var newest = now - (now % bucketMs);
        var oldest = newest - (slots - 1) * bucketMs;
        var bars = [];
        for (var s = 0; s < slots; s++) { bars.push({ t: oldest + s * bucketMs, allowed: 0, skipped: 0, deferred: 0, errors: 0 }); }
        var inWindow = (gate.recent || []).filter(function (b) { return b.t >= oldest && b.t <= newest; });
        var byReason = {};
        inWindow.forEach(function (b) {
            var bar = bars[Math.round((b.t - oldest) / bucketMs)];
            if (bar) { bar.allowed = b.allowed; bar.skipped = b.skipped; bar.deferred = b.deferred; bar.errors = b.errors; }
            Object.keys(b.skippedBy || {}).forEach(function (reason) {
                byReason[reason] = (byReason[reason] || 0) + b.skippedBy[reason];
            });
        });
        var skippedBy = Object.keys(byReason).map(function (reason) { return { reason: reason, count: byReason[reason] }; })
            .sort(function (a, b) { return b.count - a.count || (a.reason < b.reason ? -1 : 1); });
        return {
            allowed: sum(inWindow, function (b) { return b.allowed; }),
            skipped: sum(inWindow, function (b) { return b.skipped; }),
            deferred: sum(inWindow, function (b) { return b.deferred; }),
            errors: sum(inWindow, function (b) { return b.errors; }),
            failOpen: sum(inWindow, function (b) { return b.failOpen; }),
            held: sum(inWindow, function (b) { return b.held; }),
            wouldRefuse: sum(inWindow, function (b) { return b.wouldRefuse; }),
            skippedBy: skippedBy,
            bars: bars
        };
    }

    /** Everything a gate counted since its cap-config was deployed. */
    function totals(gate) {
        var out = { allowed: 0, skipped: 0, deferred: 0, errors: 0, failOpen: 0 };
        (gate.left || []).forEach(function (l) {
            out[l.output] = (out[l.output] || 0) + l.count;
            if (l.output === "allowed" && (l.reason === "fail_open" || l.reason === "overloaded")) { out.failOpen += l.count; }
        });
        out.errors = sum(gate.errors || [], function (e) { return e.count; });
        return out;
    }

    /** The shadow caps a gate saw would refuse, most first. */
    function shadowTotals(gate) {
        return (gate.shadow || []).slice().sort(function (a, b) { return b.would_refuse - a.would_refuse; });
    }

    /** 75 → "1 min 15 s": the largest unit and, when not zero, the next one; null → "never". */
    function formatSeconds(seconds, t) {
        if (seconds === null || seconds === undefined) { return t("time.never"); }
        var units = [["d", 86400, 24], ["h", 3600, 60], ["min", 60, 60], ["s", 1, 1]];
        for (var i = 0; i < units.length - 1; i++) {
            var unit = units[i];
            if (seconds >= unit[1]) {
                var next = units[i + 1];
                var rest = Math.floor(seconds / next[1]) % unit[2];
                return t("time." + unit[0], { n: Math.floor(seconds / unit[1]) }) + (rest ? " " + t("time." + next[0], { n: rest }) : "");
            }
        }
        return t("time.s", { n: seconds });
    }

    /** The usage API's caps as bars: how full each is, what is left, when it frees. */
    function usageRows(body, t) {
        return ((body && body.caps) || []).map(function (cap) {
            var max = cap.max_count;
            return {
                id: cap.cap_id,
                name: cap.name || "",
                shadow: cap.enforcement === "shadow",
                count: cap.count,
                max: max,
                remaining: cap.remaining,
                full: cap.remaining <= 0,
                retry: cap.retry_after_seconds,
                fraction: max > 0 ? Math.min(1, cap.count / max) : 1,
                scope: cap.scope === "global" ? t("usage.everyChannel") : cap.channel,
                window: formatSeconds(cap.window_seconds, t)
            };
        });
    }

    /** What to tell the user when the usage API refuses. */
    function refusal(status, body, t) {
        var said = body && typeof body.error === "string" ? body.error : "";
        if (status === 401 || status === 403) { return t("refusal.permission"); }
        if (status === 404) { return t("refusal.notDeployed"); }
        if (status === 400) { return t("refusal.badInput", { error: said }); }
        if (status === 503) { return t("refusal.store", { error: said }); }
        if (status === 0) { return t("refusal.noAnswer"); }
        return t("refusal.other", { status: status, error: said }).trim();
    }

    var model = {
        TOPIC: TOPIC, CATALOG: CATALOG, WINDOW_MS: WINDOW_MS, COLORS: COLORS,
        summarize: summarize, totals: totals, shadowTotals: shadowTotals, formatSeconds: formatSeconds,
        usageRows: usageRows, refusal: refusal
    };

    // ---- the sidebar ------------------------------------------------------------

    var SVG = "http://www.w3.org/2000/svg";

    function svg(tag, attrs) {
        var el = document.createElementNS(SVG, tag);
        Object.keys(attrs).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
        return el;
    }

    /** One stacked bar per bucket: allowed at the bottom, then deferred, skipped, errors; `labels` names each kind. */
    function sparkline(bars, labels) {
        var width = 180, height = 28, gap = 1;
        var peak = 1;
        bars.forEach(function (b) { peak = Math.max(peak, b.allowed + b.skipped + b.deferred + b.errors); });
        var barWidth = width / bars.length;
        var chart = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, "class": "sendgate-admission-spark" });
        chart.appendChild(svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, stroke: "#ccc", "stroke-width": 1 }));
        bars.forEach(function (b, i) {
            var y = height;
            ["allowed", "deferred", "skipped", "errors"].forEach(function (kind) {
                if (!b[kind]) { return; }
                var h = Math.max(1, (b[kind] / peak) * (height - 2));
                y -= h;
                var rect = svg("rect", { x: i * barWidth + gap / 2, y: y, width: Math.max(1, barWidth - gap), height: h, fill: COLORS[kind], "data-kind": kind });
                var title = svg("title", {});
                title.textContent = labels[kind] + " " + b[kind];
                rect.appendChild(title);
                chart.appendChild(rect);
            });
        });
        return chart;
    }

    function stat(kind, label, value) {
        return $('<span class="sendgate-admission-stat"></span>').attr("data-stat", kind)
            .append($('<span class="sendgate-admission-dot"></span>').css("background", COLORS[kind] || "#999"))
            .append($("<span></span>").text(label + " "))
            .append($('<b class="sendgate-admission-value"></b>').text(String(value)));
    }

    function mount(RED) {
        function t(key, params) { return RED._(CATALOG + ":admission." + key, params); }
        // what the runtime sent, each with the editor's clock minus the runtime's when it came
        var configs = {};     // cap-config id -> { config, offset }
        var gates = {};       // cap-config id -> { gate id -> { gate, bucketMs, offset } }
        var content = $('<div class="sendgate-admission"></div>');
        var gatesBox = $('<div class="sendgate-admission-gates"></div>');
        var empty = $('<div class="sendgate-admission-empty"></div>').text(t("empty"));
        $('<div class="sendgate-admission-section"></div>').text(t("gates")).appendTo(content);
        content.append(empty, gatesBox);

        // -- inspector
        var inspector = $('<div class="sendgate-admission-inspector"></div>');
        $('<div class="sendgate-admission-section"></div>').text(t("inspector")).appendTo(content);
        var configSelect = $('<select class="sendgate-admission-config"></select>');
        var recipientInput = $('<input type="text" class="sendgate-admission-recipient">').attr("placeholder", t("placeholder.recipient"));
        var orgInput = $('<input type="text" class="sendgate-admission-org">').attr("placeholder", t("placeholder.org"));
        var channelInput = $('<input type="text" class="sendgate-admission-channel" value="sms" list="sendgate-admission-channels">').attr("placeholder", t("placeholder.channel"));
        var channels = $('<datalist id="sendgate-admission-channels"></datalist>');
        ["sms", "whatsapp", "email", "voice", "rcs", "viber", "line", "messenger", "instagram", "push", "telegram", "in_app"].forEach(function (c) {
            $("<option></option>").attr("value", c).appendTo(channels);
        });
        var inspectButton = $('<button type="button" class="red-ui-button sendgate-admission-inspect"></button>').text(t("inspect"));
        var result = $('<div class="sendgate-admission-usage"></div>');
        inspector.append(
            $('<div class="sendgate-admission-row"></div>').append($("<label></label>").text(t("field.config")), configSelect),
            $('<div class="sendgate-admission-row"></div>').append($("<label></label>").text(t("field.recipient")), recipientInput),
            $('<div class="sendgate-admission-row"></div>').append($("<label></label>").text(t("field.org")), orgInput),
            $('<div class="sendgate-admission-row"></div>').append($("<label></label>").text(t("field.channel")), channelInput, channels),
            $('<div class="sendgate-admission-row"></div>').append($("<label></label>"), inspectButton),
            result
        );
        content.append(inspector);

        function runtimeNow(entry) {
            return Date.now() - entry.offset;
        }

        function labelOf(node) {
            var label = node.name;
            if (!label && node._def && typeof node._def.label === "function") {
                try { label = node._def.label.call(node); } catch (e) { label = ""; }
            }
            return label || node.type;
        }

        function gateRow(entry) {
            var gate = entry.gate;
            var node = RED.nodes.node(gate.id);
            var summary = summarize(gate, runtimeNow(entry), WINDOW_MS, entry.bucketMs);
            var row = $('<div class="sendgate-admission-gate"></div>').attr("data-gate", gate.id);
            var tab = RED.nodes.workspace(node.z);
            var head = $('<div class="sendgate-admission-gate-head"></div>').appendTo(row);
            $('<a href="#" class="sendgate-admission-gate-name"></a>').text(labelOf(node)).on("click", function (e) {
                e.preventDefault();
                RED.view.reveal(gate.id);
            }).appendTo(head);
            $('<span class="sendgate-admission-gate-where"></span>').text(" " + gate.type + (tab ? " · " + tab.label : "")).appendTo(head);
            row.append(sparkline(summary.bars, { allowed: t("stat.allowed"), skipped: t("stat.skipped"), deferred: t("stat.deferred"), errors: t("stat.errors") }));
            var stats = $('<div class="sendgate-admission-stats"></div>').appendTo(row);
            ["allowed", "skipped", "deferred"].forEach(function (kind) { stats.append(stat(kind, t("stat." + kind), summary[kind])); });
            if (summary.errors > 0) { stats.append(stat("errors", t("stat.errors"), summary.errors)); }
            if (summary.skippedBy.length > 0) {
                $('<div class="sendgate-admission-reasons"></div>')
                    .text(t("skippedBy", { reasons: summary.skippedBy.map(function (r) { return r.reason + " " + r.count; }).join(", ") }))
                    .appendTo(row);
            }
            var extra = [];
            if (summary.failOpen > 0) { extra.push(t("failOpen", { count: summary.failOpen })); }
            if (summary.held > 0) { extra.push(t("held", { count: summary.held })); }
            if (gate.heldNow > 0) { extra.push(t("holding", { count: gate.heldNow })); }
            if (extra.length > 0) { $('<div class="sendgate-admission-extra"></div>').text(extra.join(" · ")).appendTo(row); }
            shadowTotals(gate).forEach(function (s) {
                var params = { cap: s.cap_id, org: s.org, count: s.would_refuse };
                $('<div class="sendgate-admission-shadow"></div>').attr("data-cap", s.cap_id)
                    .text(t(s.org !== "*" ? "shadowOrg" : "shadow", params))
                    .attr("title", t("shadowTitle"))
                    .appendTo(row);
            });
            row.attr("title", t("totals", totals(gate)));
            return row;
        }

        function render() {
            gatesBox.empty();
            var shown = 0;
            Object.keys(configs).sort().forEach(function (configId) {
                var own = gates[configId] || {};
                var shownGates = Object.keys(own).map(function (id) { return own[id]; }).filter(function (e) { return !!RED.nodes.node(e.gate.id); });
                if (shownGates.length === 0) { return; }
                var config = configs[configId].config;
                var block = $('<div class="sendgate-admission-config-block"></div>').attr("data-config", configId).appendTo(gatesBox);
                var state = [t("config.store", { store: config.store, state: config.storeState }), t("config.held", { count: config.held })];
                if (config.maxQueued > 0) { state.push(t("config.queue", { length: config.queueLength, max: config.maxQueued })); }
                if (config.circuit !== "closed") { state.push(t("config.circuit", { state: config.circuit.replace("_", "-") })); }
                if (config.rulesState !== "ok") { state.push(t("config.rules", { state: config.rulesState })); }
                $('<div class="sendgate-admission-config-head"></div>')
                    .append($("<b></b>").text(config.name))
                    .append($('<span class="sendgate-admission-config-state"></span>').text(" " + state.join(" · ")))
                    .appendTo(block);
                shownGates.sort(function (a, b) { return labelOf(RED.nodes.node(a.gate.id)).localeCompare(labelOf(RED.nodes.node(b.gate.id))); })
                    .forEach(function (e) { block.append(gateRow(e)); shown++; });
            });
            empty.toggle(shown === 0);
        }

        function refreshConfigs() {
            var selected = configSelect.val();
            configSelect.empty();
            RED.nodes.eachConfig(function (n) {
                if (n.type === "cap-config") { $("<option></option>").attr("value", n.id).text(n.name || n.id).appendTo(configSelect); }
            });
            if (selected && configSelect.find("option").filter(function () { return this.value === selected; }).length) { configSelect.val(selected); }
        }

        function showUsage(body) {
            result.empty();
            var rows = usageRows(body, t);
            $('<div class="sendgate-admission-usage-head"></div>').text(t("usage.head", { recipient: body.recipient, channel: body.channel, org: body.org })).appendTo(result);
            if (rows.length === 0) { $('<div class="sendgate-admission-empty"></div>').text(t("usage.none")).appendTo(result); }
            rows.forEach(function (r) {
                var cap = $('<div class="sendgate-admission-cap"></div>').attr("data-cap", r.id).toggleClass("sendgate-admission-cap-shadow", r.shadow).appendTo(result);
                $('<div class="sendgate-admission-cap-head"></div>')
                    .append($("<b></b>").text(r.id))
                    .append($("<span></span>").text((r.shadow ? " " + t("usage.shadow") : "") + " · " + r.scope + " · " + r.window))
                    .appendTo(cap);
                var bar = $('<div class="sendgate-admission-bar"></div>').appendTo(cap);
                $('<div class="sendgate-admission-bar-fill"></div>').css("width", Math.round(r.fraction * 100) + "%").toggleClass("sendgate-admission-bar-full", r.full).appendTo(bar);
                var text = t("usage.text", { count: r.count, max: r.max, remaining: r.remaining });
                if (r.full) { text += " · " + t(r.shadow ? "usage.wouldRefuse" : "usage.free", { wait: formatSeconds(r.retry, t) }); }
                $('<div class="sendgate-admission-cap-text"></div>').text(text).appendTo(cap);
            });
        }

        function showRefusal(text) {
            result.empty();
            $('<div class="sendgate-admission-refusal"></div>').text(text).appendTo(result);
        }

        inspectButton.on("click", function () {
            var config = configSelect.val();
            if (!config) { showRefusal(t("refusal.noConfig")); return; }
            var query = { recipient: String(recipientInput.val() || "").trim(), channel: String(channelInput.val() || "").trim() };
            var org = String(orgInput.val() || "").trim();
            if (org) { query.org = org; }
            if (!query.recipient) { showRefusal(t("refusal.noRecipient")); return; }
            result.empty().append($('<div class="sendgate-admission-empty"></div>').text(t("reading")));
            $.ajax({ url: "frequency-cap/" + encodeURIComponent(config) + "/usage", data: query, dataType: "json", cache: false })
                .done(showUsage)
                .fail(function (xhr) { showRefusal(refusal(xhr.status, xhr.responseJSON, t)); });
        });

        /** `sendgate/admission/<config>` (its send path) or `…/<config>/<gate>` (a gate's counts); null: it is gone. */
        function onMessage(topic, message) {
            var path = topic.slice(TOPIC.length + 1);
            var slash = path.indexOf("/");
            var configId = slash < 0 ? path : path.slice(0, slash);
            var gateId = slash < 0 ? null : path.slice(slash + 1);
            var offset = message ? Date.now() - message.at : 0;
            if (gateId === null) {
                if (message) { configs[configId] = { config: message.config, offset: offset }; } else { delete configs[configId]; }
            } else {
                var own = gates[configId] = gates[configId] || {};
                if (message) { own[gateId] = { gate: message.gate, bucketMs: message.bucketMs, offset: offset }; } else { delete own[gateId]; }
            }
            scheduleRender();
        }

        // many topics can arrive in one burst (an editor opening gets every retained one): draw once
        var renderPending = false;
        function scheduleRender() {
            if (renderPending) { return; }
            renderPending = true;
            setTimeout(function () { renderPending = false; render(); }, 50);
        }

        var events = ["nodes:add", "nodes:remove", "nodes:change", "flows:loaded", "workspace:change"];
        // an import or a deploy adds or changes many nodes at once: look again once they are all there
        var flowsPending = false;
        function onFlowsChanged() {
            if (flowsPending) { return; }
            flowsPending = true;
            setTimeout(function () {
                flowsPending = false;
                refreshConfigs();
                render();
            }, 100);
        }

        RED.sidebar.addTab({
            id: "sendgate-admission",
            label: t("label"),
            name: t("name"),
            iconClass: "fa fa-tachometer",
            content: content,
            enableOnEdit: true,
            onchange: onFlowsChanged
        });
        RED.comms.subscribe(TOPIC + "/#", onMessage);
        events.forEach(function (e) { RED.events.on(e, onFlowsChanged); });
        // windows slide even when nothing new arrives
        var timer = setInterval(render, 5000);
        refreshConfigs();

        return {
            remove: function () {
                clearInterval(timer);
                RED.comms.unsubscribe(TOPIC + "/#", onMessage);
                events.forEach(function (e) { RED.events.off(e, onFlowsChanged); });
                RED.sidebar.removeTab("sendgate-admission");
            }
        };
    }

    var api = { model: model, mount: mount };
    if (typeof module === "object" && module.exports) { module.exports = api; } else { root.SendgateAdmission = api; }
})(typeof window !== "undefined" ? window : this);
