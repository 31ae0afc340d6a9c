// The inspector of `harness serve` (docs/serve.md "The inspector").
//
// Every datum the API returns (transcripts, summaries, model output, ids) is untrusted: it is
// put on the page with textContent and createTextNode only, never parsed as HTML, never made a
// link. The page has no inline script (the Content-Security-Policy allows scripts of this origin
// only), and it reads the event stream with fetch() rather than EventSource, because
// EventSource cannot send the Authorization header a server with a token requires.
"use strict";

(() => {
  const TOKEN_KEY = "harness.inspector.token";
  const RECONNECT_MIN_MS = 500;
  const RECONNECT_MAX_MS = 10000;
  const TIMELINE_MAX = 500;

  // docs/events.md: the reject reasons 1..19, the compaction reasons, the coverage classes.
  const REJECT_REASONS = [
    "", "control_lane_full", "shutting_down", "interrupted", "canceled", "stale_basis",
    "progress_publication", "unavailable", "execution_failed", "invalid_summary",
    "context_count_failed", "summary_too_large", "internal", "context_limit_unknown",
    "retained_tail_too_large", "coverage_insufficient", "pinned_too_large", "ineffective",
    "discarded", "proposal_expired",
  ];
  const COMPACTION_REASONS = { 1: "manual", 2: "automatic" };
  const COVERAGE_CLASSES = [
    "", "request", "constraint", "path", "identifier", "command", "error", "test", "url",
    "quantity",
  ];
  const DETAIL_TEXT = {
    no_history: "the loop has no history after its last summary to compact",
    history_fits_tail_target:
      "the whole history fits the retained tail; lower keep_recent_tokens to compact anyway",
    nothing_before_tail:
      "the history holds only the current request and no complete step before the retained tail",
    open_tool_call:
      "the calls of a message have no results yet and stay retained, and no complete step " +
      "comes before them",
    invalid_transcript: "a message breaks the transcript rules",
    invalid_policy: "the policy's retained-tail targets are invalid",
    tail_too_large:
      "tail plus summary budget reach the input limit; lower keep_recent_tokens or " +
      "max_summary_tokens",
    would_not_shrink:
      "tail plus summary budget would not be smaller than the context now; lower " +
      "keep_recent_tokens or max_summary_tokens, or compact later",
  };
  // The bar's categories, in the order they fill the window (inspector.css colours them).
  const CATEGORIES = [
    ["system_prompt", "System prompt"],
    ["tools", "Tools"],
    ["summary", "Summary"],
    ["messages", "Messages"],
    ["retained_tail", "Retained tail"],
    ["unattributed", "Measured, not attributed"],
    ["free", "Free"],
    ["safety_margin", "Safety margin"],
    ["reserved_output", "Reserved output"],
  ];

  const $ = (id) => document.getElementById(id);

  const state = {
    session: null, // the selected session's id
    loop: null, // the selected loop's id
    proposal: null, // the selected loop's CompactionProposed waiting for a decision
    stream: null, // the AbortController of the event stream
    lastSeq: 0, // the last enduring event delivered: a reconnection resumes after it
    histories: new Map(), // loop id -> the messages the events say it holds
    replaced: new Map(), // loop id -> [{history, installed}]: what each commit replaced (undo)
    exited: new Set(), // loop ids whose LoopExited was delivered
    compactions: new Map(), // loop id -> [{event, left}]
    refresh: null, // the pending refresh timer
  };

  // ---- Rendering (text only) ----

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function showError(text) {
    const node = $("error");
    node.textContent = text || "";
    node.hidden = !text;
  }

  // The end of an id: UUIDv7s made in the same millisecond share their first 12 digits.
  function short(id) {
    return typeof id === "string" ? id.slice(-8) : "";
  }

  // A message's blocks as plain text: text verbatim, everything else a bracketed mark.
  function blockText(block) {
    if (!block || typeof block !== "object") return "";
    switch (block.type) {
      case "text":
        return String(block.text ?? "");
      case "tool_use":
        return `[tool call ${block.name ?? ""} ${JSON.stringify(block.input ?? null)}]`;
      case "tool_result":
        return `[tool result: ${(block.content || []).map(blockText).join("")}]`;
      case "refusal":
        return `[refusal: ${block.text ?? ""}]`;
      default:
        return `[${String(block.type)}]`;
    }
  }

  function messageText(message) {
    const blocks = message && Array.isArray(message.blocks) ? message.blocks : [];
    return blocks.map(blockText).join("\n");
  }

  function messageItem(message, label) {
    const item = el("li", "message role-" + String(message?.role ?? "unknown"));
    item.appendChild(el("span", "role", label ?? String(message?.role ?? "?")));
    item.appendChild(el("pre", "text", messageText(message)));
    return item;
  }

  // ---- The API ----

  function authHeaders() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { Authorization: "Bearer " + token } : {};
  }

  class Unauthorized extends Error {}

  function askToken() {
    $("token-panel").hidden = false;
    $("token-input").focus();
  }

  async function api(method, path, body) {
    const headers = authHeaders();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    if (response.status === 401) {
      askToken();
      throw new Unauthorized("this server requires a bearer token");
    }
    const text = await response.text();
    let json = null;
    if (text) {
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`${method} ${path}: the answer is not JSON (HTTP ${response.status})`);
      }
    }
    if (!response.ok) {
      const error = json && json.error ? `${json.error.kind}: ${json.error.detail}` : "";
      throw new Error(`${method} ${path}: HTTP ${response.status} ${error}`);
    }
    return json;
  }

  function report(error) {
    if (!(error instanceof Unauthorized)) showError(String(error.message || error));
  }

  // ---- Sessions and loops ----

  async function loadSessions() {
    const list = await api("GET", "/v1/sessions");
    showError("");
    const ul = $("sessions");
    clear(ul);
    for (const s of list.sessions || []) {
      const li = el("li", "session");
      li.dataset.session = s.session_id;
      if (s.session_id === state.session) li.classList.add("selected");
      const button = el("button", "link", s.session_id);
      button.type = "button";
      button.addEventListener("click", () => selectSession(s.session_id).catch(report));
      li.appendChild(button);
      li.appendChild(el("span", "note", s.in_memory ? " in memory" : " in the journal"));
      ul.appendChild(li);
    }
    if (!ul.firstChild) ul.appendChild(el("li", "note", "No session yet."));
  }

  async function loadSession() {
    if (!state.session) return;
    const s = await api("GET", "/v1/sessions/" + state.session);
    $("session-title").textContent = "Session " + s.session_id + (s.faulted ? " (faulted)" : "");
    const ul = $("loops");
    clear(ul);
    for (const loop of s.loops || []) {
      const li = el("li", "loop");
      li.dataset.loop = loop.loop_id;
      if (loop.loop_id === state.loop) li.classList.add("selected");
      const button = el("button", "link", loop.loop_id);
      button.type = "button";
      button.addEventListener("click", () => selectLoop(loop.loop_id));
      li.appendChild(button);
      const facts = [
        loop.status,
        `${loop.history_messages} messages`,
        loop.queued_inputs ? `${loop.queued_inputs} queued` : "",
        loop.compacting ? "compacting" : "",
        loop.loop_id === s.active_loop ? "active" : "",
      ].filter(Boolean);
      li.appendChild(el("span", "note", " " + facts.join(", ")));
      ul.appendChild(li);
    }
    if (!state.loop && s.active_loop) selectLoop(s.active_loop);
  }

  async function selectSession(id) {
    if (state.stream) state.stream.abort();
    state.session = id;
    state.loop = null;
    state.lastSeq = 0;
    state.histories = new Map();
    state.replaced = new Map();
    state.compactions = new Map();
    state.exited = new Set();
    clear($("timeline"));
    $("loop-panel").hidden = true;
    for (const li of document.querySelectorAll("#sessions li")) {
      li.classList.toggle("selected", li.dataset.session === id);
    }
    await loadSession();
    const controller = new AbortController();
    state.stream = controller;
    streamEvents(id, controller.signal);
  }

  function selectLoop(id) {
    state.loop = id;
    for (const li of document.querySelectorAll("#loops li")) {
      li.classList.toggle("selected", li.dataset.loop === id);
    }
    $("loop-panel").hidden = false;
    renderCompactions();
    loadLoop().catch(report);
  }

  async function loadLoop() {
    if (!state.session || !state.loop) return;
    const base = `/v1/sessions/${state.session}/loops/${state.loop}`;
    const [history, context] = await Promise.all([
      api("GET", base + "/history"),
      api("GET", base + "/context"),
    ]);
    const ol = $("transcript");
    clear(ol);
    const ids = history.message_ids || [];
    const pinned = new Set(history.pinned || []);
    const masked = new Set(history.masked || []);
    (history.messages || []).forEach((m, i) => {
      const item = messageItem(m, i < history.derived_prefix ? "summary" : undefined);
      // docs/pins.md: a pinned message is never summarized; the summary itself cannot be pinned.
      const id = ids[i];
      if (id && !(i === 0 && history.derived_prefix > 0)) {
        const on = pinned.has(id);
        item.dataset.pinned = String(on);
        const pin = el("button", "pin", on ? "unpin" : "pin");
        pin.type = "button";
        pin.addEventListener("click", () => togglePin(id, on).catch(report));
        item.insertBefore(pin, item.firstChild);
      }
      // docs/masking.md: a masked tool output shows its stub; its original can be read here
      // (as text, like every message) or put back.
      if (id && masked.has(id)) {
        item.dataset.masked = "true";
        const show = el("button", "original", "show original");
        show.type = "button";
        show.addEventListener("click", () => showOriginal(item, id).catch(report));
        const unmask = el("button", "unmask", "unmask");
        unmask.type = "button";
        unmask.addEventListener("click", () => maskControl("unmask-one", id).catch(report));
        item.appendChild(show);
        item.appendChild(unmask);
      }
      ol.appendChild(item);
    });
    $("unmask-button").disabled = masked.size === 0;
    // docs/undo.md, docs/preview.md: what the controls may do now.
    state.proposal = history.proposal || null;
    $("undo-button").disabled = !(history.undoable > 0);
    $("proposal-actions").hidden = state.proposal === null;
    renderContext(context);
  }

  // Session and loop facts change with every turn: one refresh for a burst of events.
  function scheduleRefresh() {
    if (state.refresh) return;
    state.refresh = setTimeout(() => {
      state.refresh = null;
      loadSession().catch(report);
      loadLoop().catch(report);
    }, 150);
  }

  // ---- The context bar ----

  function renderContext(c) {
    const bar = $("context-bar");
    const legend = $("context-legend");
    clear(bar);
    clear(legend);
    const e = c.estimates || {};
    const w = c.window;
    const values = {
      system_prompt: e.system_prompt || 0,
      tools: e.tools || 0,
      summary: e.summary || 0,
      messages: e.messages || 0,
      retained_tail: e.retained_tail || 0,
    };
    const estimated = Object.values(values).reduce((a, b) => a + b, 0);
    const measured = c.measurement ? c.measurement.input_tokens : null;
    if (measured !== null && measured > estimated) values.unattributed = measured - estimated;
    if (w) {
      values.free = w.free;
      values.safety_margin = w.safety_margin;
      values.reserved_output = w.reserved_output;
    }
    const total = Object.values(values).reduce((a, b) => a + b, 0) || 1;
    const header = legend.insertRow();
    for (const h of ["", "Category", "Tokens", "Share"]) header.appendChild(el("th", "", h));
    for (const [key, label] of CATEGORIES) {
      if (!(key in values)) continue;
      const tokens = values[key];
      const share = (100 * tokens) / total;
      const segment = el("div", "segment cat-" + key);
      segment.style.width = share.toFixed(3) + "%";
      segment.title = `${label}: ${tokens} tokens`;
      segment.dataset.category = key;
      bar.appendChild(segment);
      const row = legend.insertRow();
      row.dataset.category = key;
      row.insertCell().appendChild(el("span", "swatch cat-" + key));
      const estimate = key in e ? " (estimate)" : "";
      row.insertCell().textContent = label + estimate;
      row.insertCell().textContent = String(tokens);
      row.insertCell().textContent = share.toFixed(1) + "%";
    }
    const notes = [];
    if (measured !== null) {
      notes.push(`Measured input: ${measured} of ${c.measurement.input_limit} tokens.`);
    } else {
      notes.push("No measurement yet: the used part is the estimate.");
    }
    if (!w) notes.push("The model's input limit is unknown: no free space is shown.");
    notes.push(
      `Pressure ${c.pressure}; ${c.history_messages} messages; ` +
        "the categories are conservative estimates (4 bytes a token)."
    );
    $("context-note").textContent = notes.join(" ");
  }

  // ---- Compactions ----

  // The summary's sections: the children of <conversation_summary> (or of the whole text),
  // found by a regular expression over the text; nothing is parsed as markup.
  function summarySections(text) {
    const inner = /<conversation_summary>([\s\S]*?)<\/conversation_summary>/.exec(text);
    const body = inner ? inner[1] : text;
    const sections = [];
    const re = /<([a-z_]+)>([\s\S]*?)<\/\1>/g;
    let m;
    while ((m = re.exec(body)) !== null) {
      sections.push([m[1].replace(/_/g, " "), unescapeXml(m[2].trim())]);
    }
    return sections.length ? sections : [["summary", text]];
  }

  // A section's text is XML character data: its five entities are undone by string
  // replacement (the result is still only ever put on the page as text).
  function unescapeXml(text) {
    const entities = { lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" };
    return text.replace(/&(lt|gt|quot|apos|amp);/g, (_, name) => entities[name]);
  }

  // What left the context: the messages held before the commit that the retained list does
  // not keep (compared as their JSON, each retained message matching once).
  function leftOut(before, retained) {
    const kept = new Map();
    for (const m of retained) {
      const key = JSON.stringify(m);
      kept.set(key, (kept.get(key) || 0) + 1);
    }
    const left = [];
    for (const m of before) {
      const key = JSON.stringify(m);
      const n = kept.get(key) || 0;
      if (n > 0) kept.set(key, n - 1);
      else left.push(m);
    }
    return left;
  }

  function coverageBlock(coverage) {
    const box = el("div", "coverage");
    box.appendChild(el("h4", "", "Coverage" + (coverage.waived ? " (waived)" : "")));
    const table = el("table");
    const header = table.insertRow();
    for (const h of ["Class", "Found", "Total"]) header.appendChild(el("th", "", h));
    for (const c of coverage.classes || []) {
      const row = table.insertRow();
      row.insertCell().textContent = COVERAGE_CLASSES[c.class] || String(c.class);
      row.insertCell().textContent = String(c.found);
      row.insertCell().textContent = String(c.total);
    }
    box.appendChild(table);
    if ((coverage.missing || []).length) {
      box.appendChild(el("p", "", "Missing anchors:"));
      const ul = el("ul");
      for (const m of coverage.missing) {
        ul.appendChild(el("li", "", `${COVERAGE_CLASSES[m.class] || m.class}: ${m.text}`));
      }
      box.appendChild(ul);
    }
    // Coverage repair (docs/decisions.md P21): what the runtime wrote into the summary.
    if (coverage.repaired_count) {
      box.appendChild(el("p", "", `Repaired anchors (${coverage.repaired_count}):`));
      const ul = el("ul");
      for (const r of coverage.repaired || []) {
        ul.appendChild(el("li", "", `${COVERAGE_CLASSES[r.class] || r.class}: ${r.text}`));
      }
      box.appendChild(ul);
    }
    return box;
  }

  function messageList(title, messages) {
    const box = el("details", "messages");
    box.appendChild(el("summary", "", `${title} (${messages.length})`));
    const ol = el("ol");
    for (const m of messages) ol.appendChild(messageItem(m));
    box.appendChild(ol);
    return box;
  }

  // docs/preview.md: a proposal waits for a person; its terminal follows it in the list.
  function proposalCard({ seq, event }) {
    const card = el("article", "compaction proposed");
    card.dataset.type = event.type;
    card.dataset.seq = String(seq);
    const until = String(event.expires_at);
    card.appendChild(el("h4", "", `#${seq} Proposed (waits for approval until ${until})`));
    const post = event.post_context || {};
    card.appendChild(
      el(
        "p",
        "note",
        `${event.replaced} messages would be summarized, ${(event.kept || []).length} kept; ` +
          `after: ${post.input_tokens} of ${post.input_limit} input tokens.`
      )
    );
    const sections = el("dl", "summary");
    for (const [name, text] of summarySections(messageText(event.summary))) {
      sections.appendChild(el("dt", "", name));
      sections.appendChild(el("dd", "", text));
    }
    card.appendChild(sections);
    if (event.coverage) card.appendChild(coverageBlock(event.coverage));
    return card;
  }

  function compactionCard({ seq, event, left }) {
    if (event.type === "CompactionProposed") return proposalCard({ seq, event });
    const committed = event.type === "CompactionCommitted";
    const card = el("article", "compaction " + (committed ? "committed" : "rejected"));
    card.dataset.type = event.type;
    card.dataset.seq = String(seq);
    const reason = COMPACTION_REASONS[event.reason] || String(event.reason);
    const ms = typeof event.duration === "number" ? Math.round(event.duration / 1e6) : 0;
    card.appendChild(
      el("h4", "", `#${seq} ${committed ? "Committed" : "Rejected"} (${reason}, ${ms} ms)`)
    );
    if (committed) {
      const post = event.post_context || {};
      card.appendChild(
        el("p", "note", `After: ${post.input_tokens} of ${post.input_limit} input tokens.`)
      );
      const sections = el("dl", "summary");
      for (const [name, text] of summarySections(messageText(event.summary))) {
        sections.appendChild(el("dt", "", name));
        sections.appendChild(el("dd", "", text));
      }
      card.appendChild(sections);
      card.appendChild(messageList("Kept (retained tail)", event.retained || []));
      card.appendChild(messageList("Left the context", left || []));
    } else {
      const name = REJECT_REASONS[event.reject_reason] || String(event.reject_reason);
      card.appendChild(el("p", "reject-reason", "Reason: " + name));
      if (event.detail) {
        const { kind, ...numbers } = event.detail;
        const facts = Object.entries(numbers).map(([k, v]) => `${k} ${v}`).join(", ");
        card.appendChild(
          el(
            "p",
            "reject-detail",
            `Detail: ${kind}${facts ? " (" + facts + ")" : ""}: ${DETAIL_TEXT[kind] || ""}`
          )
        );
      }
    }
    if (event.coverage) card.appendChild(coverageBlock(event.coverage));
    return card;
  }

  function renderCompactions() {
    const box = $("compactions");
    clear(box);
    const list = state.compactions.get(state.loop) || [];
    if (!list.length) box.appendChild(el("p", "note", "None yet."));
    for (const c of list.slice().reverse()) box.appendChild(compactionCard(c));
  }

  // ---- Events ----

  function allExited() {
    const loops = [...state.histories.keys()];
    return loops.length > 0 && loops.every((l) => state.exited.has(l));
  }

  function history(loop) {
    if (!state.histories.has(loop)) state.histories.set(loop, []);
    return state.histories.get(loop);
  }

  function timelineText(event) {
    switch (event.type) {
      case "InputAccepted":
      case "MessageCommitted":
        return messageText(event.message).slice(0, 200);
      case "CompactionCommitted":
        return `${COMPACTION_REASONS[event.reason] || ""}, ${(event.retained || []).length} kept`;
      case "CompactionRejected":
        return REJECT_REASONS[event.reject_reason] || "";
      case "CompactionProposed":
        return `${event.replaced} would be summarized, ${(event.kept || []).length} kept; waits`;
      case "ToolOutputsMasked":
      case "ToolOutputsUnmasked":
        return `${(event.message_ids || []).length} tool outputs, ${event.post_context?.input_tokens ?? "?"} tokens after`;
      case "CompactionChunkSummarized":
        return `chunk ${Number(event.chunk) + 1}/${event.chunks} summarized`;
      case "TurnFailed": {
        // The measurement a failure carries (docs/events.md, TurnFailed).
        const figures = event.context
          ? ` (${event.context.input_tokens}/${event.context.input_limit} tokens)`
          : event.steps ? ` (${event.steps.made}/${event.steps.limit} model calls)` : "";
        return String(event.reason ?? "") + (event.detail ? ": " + event.detail : "") + figures;
      }
      case "TurnInterrupted":
      case "InputRejected":
      case "InputCancelled":
      case "LoopExited":
        return String(event.reason ?? "") + (event.detail ? ": " + event.detail : "");
      default:
        return "";
    }
  }

  function onEvent(type, data) {
    if (type === "lagged") {
      // The stream ends; the reconnection resumes after the last delivered event.
      state.lastSeq = Math.max(state.lastSeq, Number(data.last_seq) || 0);
      return;
    }
    if (type === "end") return;
    const event = data.event || {};
    const seq = Number(data.seq) || 0;
    if (seq > 0) state.lastSeq = Math.max(state.lastSeq, seq);
    const loop = event.loop_id;
    switch (event.type) {
      case "LoopCreated":
        state.histories.set(loop, (event.history || []).slice());
        break;
      case "LoopHistoryContinued":
        history(loop).push(...(event.history || []));
        break;
      case "InputAccepted":
      case "MessageCommitted":
        if (event.message) history(loop).push(event.message);
        break;
      case "CompactionCommitted": {
        const before = history(loop);
        const pinned = (event.pinned || []).map((kept) => kept.message);
        const kept = [...pinned, ...(event.retained || [])];
        const left = leftOut(before, kept);
        // docs/undo.md: an undo puts back the history a commit replaced, then what came since.
        if (!state.replaced.has(loop)) state.replaced.set(loop, []);
        state.replaced.get(loop).push({ history: before.slice(), installed: 1 + kept.length });
        state.histories.set(loop, [event.summary, ...kept]);
        if (!state.compactions.has(loop)) state.compactions.set(loop, []);
        state.compactions.get(loop).push({ seq, event, left });
        break;
      }
      case "ToolOutputsMasked":
        // docs/masking.md: undoable as a commit is; the mirror keeps the originals' text, only
        // the stack needs the entry so that an undo pops the right one.
        if (!state.replaced.has(loop)) state.replaced.set(loop, []);
        state.replaced.get(loop).push({ history: history(loop).slice(), installed: history(loop).length });
        break;
      case "HistoryReverted": {
        const stack = state.replaced.get(loop) || [];
        const entry = stack.pop();
        if (entry) {
          const since = history(loop).slice(entry.installed);
          state.histories.set(loop, [...entry.history, ...since]);
        }
        break;
      }
      case "LoopExited":
        state.exited.add(loop);
        break;
      case "CompactionProposed":
      case "CompactionRejected":
        if (!state.compactions.has(loop)) state.compactions.set(loop, []);
        state.compactions.get(loop).push({ seq, event, left: [] });
        break;
      default:
        break;
    }
    const li = el("li", "event");
    li.dataset.type = String(event.type);
    li.dataset.seq = String(seq);
    if (loop && loop === state.loop) li.classList.add("selected-loop");
    li.appendChild(el("span", "seq", seq ? "#" + seq : "live"));
    li.appendChild(el("span", "type", String(event.type)));
    if (loop) li.appendChild(el("span", "loop", short(loop)));
    li.appendChild(el("span", "detail", timelineText(event)));
    const ol = $("timeline");
    ol.insertBefore(li, ol.firstChild);
    while (ol.childNodes.length > TIMELINE_MAX) ol.removeChild(ol.lastChild);
    const kind = String(event.type);
    if (kind.startsWith("Compaction") && kind !== "CompactionStarted") {
      if (loop === state.loop) renderCompactions();
    }
    scheduleRefresh();
  }

  function setStreamStatus(text) {
    $("stream-status").textContent = text;
  }

  // A text/event-stream read with fetch(): lines of "field: value", a blank line ends an event
  // (the WHATWG rules: a comment starts with ":", one space after the colon is dropped, data
  // lines join with "\n"). A dropped stream reconnects with Last-Event-ID, so that nothing is
  // missed and nothing repeats.
  async function streamEvents(session, signal) {
    let delay = RECONNECT_MIN_MS;
    while (!signal.aborted && state.session === session) {
      const headers = authHeaders();
      let url = `/v1/sessions/${session}/events`;
      if (state.lastSeq > 0) headers["Last-Event-ID"] = String(state.lastSeq);
      else url += "?from=1";
      let ended = false;
      try {
        const response = await fetch(url, { headers, signal, cache: "no-store" });
        if (response.status === 401) {
          askToken();
          setStreamStatus("needs a token");
          return;
        }
        if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
        setStreamStatus("live");
        delay = RECONNECT_MIN_MS;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        let type = "";
        let data = [];
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          for (;;) {
            const match = /\r\n|\n|\r(?!$)/.exec(buffer);
            if (!match) break;
            const line = buffer.slice(0, match.index);
            buffer = buffer.slice(match.index + match[0].length);
            if (line === "") {
              if (data.length) {
                let parsed = null;
                try {
                  parsed = JSON.parse(data.join("\n"));
                } catch {
                  parsed = null;
                }
                if (parsed && typeof parsed === "object") onEvent(type || "message", parsed);
                if (type === "end") ended = true;
              }
              type = "";
              data = [];
              continue;
            }
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            let value = colon < 0 ? "" : line.slice(colon + 1);
            if (value.startsWith(" ")) value = value.slice(1);
            if (field === "event") type = value;
            else if (field === "data") data.push(value);
            else if (field === "id" && /^[0-9]+$/.test(value)) {
              state.lastSeq = Math.max(state.lastSeq, Number(value));
            }
          }
        }
      } catch (error) {
        if (signal.aborted) return;
      }
      // The session left the server's memory (a stop, or a DELETE). A session with a loop
      // still running is followed again once the server has it back (a request restores it);
      // one whose loops all exited has nothing more to say.
      if (ended && allExited()) {
        setStreamStatus("ended: every loop of the session has exited");
        return;
      }
      setStreamStatus("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  }

  // ---- Actions ----

  async function togglePin(id, pinned) {
    const base = `/v1/sessions/${state.session}/loops/${state.loop}`;
    const answer = await api(pinned ? "DELETE" : "PUT", `${base}/pins/${id}`);
    $("action-status").textContent =
      `${answer.pinned ? "pinned" : "unpinned"} ${short(id)}${answer.changed ? "" : " (no change)"}`;
    await loadLoop();
  }

  // docs/masking.md: the original a stub replaced, shown under it.
  async function showOriginal(item, id) {
    const base = `/v1/sessions/${state.session}/loops/${state.loop}`;
    const answer = await api("GET", `${base}/masked/${id}`);
    const shown = messageItem(answer.message, "original");
    shown.classList.add("original");
    item.appendChild(shown);
  }

  // Mask, unmask all, unmask one: answered once their event is durable (docs/serve.md).
  async function maskControl(action, id) {
    if (!state.session || !state.loop) return;
    const base = `/v1/sessions/${state.session}/loops/${state.loop}`;
    const answer =
      action === "mask" ? await api("POST", base + "/mask", {})
      : action === "unmask" ? await api("POST", base + "/unmask", {})
      : await api("DELETE", `${base}/masked/${id}`);
    $("action-status").textContent = `${action === "mask" ? "mask" : "unmask"}: done (${short(answer.event_id)})`;
    await loadLoop();
  }

  // Undo, approve, discard: answered once their event is durable (docs/serve.md).
  async function control(action) {
    if (!state.session || !state.loop) return;
    const base = `/v1/sessions/${state.session}/loops/${state.loop}`;
    const status = $("action-status");
    if (action === "undo") {
      const answer = await api("POST", base + "/undo", {});
      status.textContent = `undo: done (${short(answer.event_id)})`;
    } else {
      if (!state.proposal) return;
      const attempt = state.proposal.attempt_id;
      const answer = await api("POST", `${base}/proposals/${attempt}/${action}`, {});
      status.textContent = `${action}: done (${short(answer.terminal_event_id)})`;
    }
    await loadLoop();
  }

  async function act(action) {
    if (!state.session || !state.loop) return;
    if (action === "preview") {
      const path = `/v1/sessions/${state.session}/loops/${state.loop}/compact`;
      const accepted = await api("POST", path, { preview: true });
      $("action-status").textContent =
        `preview: asked (${short(accepted.command_id)}); approve or discard the proposal`;
      return;
    }
    const status = $("action-status");
    const path = `/v1/sessions/${state.session}/loops/${state.loop}/${action}`;
    status.textContent = action + ": sending";
    const accepted = await api("POST", path, {});
    if (action !== "compact") {
      status.textContent = `${action}: accepted (${short(accepted.command_id)})`;
      return;
    }
    status.textContent = `compact: waiting (${short(accepted.command_id)})`;
    // The session's lookup: it answers from the journal too, after a restart of the server.
    const session = state.session;
    for (;;) {
      const asked = Date.now();
      const reply = await api(
        "GET", `/v1/sessions/${session}/commands/${accepted.command_id}?wait_ms=30000`);
      if (reply.status === "answered") {
        const r = reply.reply || {};
        const why = r.reason ? " " + (REJECT_REASONS[r.reason] || r.reason) : "";
        status.textContent = `compact: ${r.type}${why}`;
        return;
      }
      // Pending at once (another server holds the session): ask again in a second, not at once.
      if (Date.now() - asked < 1000) await new Promise((done) => setTimeout(done, 1000));
    }
  }

  function start() {
    $("refresh-sessions").addEventListener("click", () => loadSessions().catch(report));
    $("compact-button").addEventListener("click", () => act("compact").catch(report));
    $("interrupt-button").addEventListener("click", () => act("interrupt").catch(report));
    $("preview-button").addEventListener("click", () => act("preview").catch(report));
    $("undo-button").addEventListener("click", () => control("undo").catch(report));
    $("mask-button").addEventListener("click", () => maskControl("mask").catch(report));
    $("unmask-button").addEventListener("click", () => maskControl("unmask").catch(report));
    $("approve-button").addEventListener("click", () => control("approve").catch(report));
    $("discard-button").addEventListener("click", () => control("discard").catch(report));
    $("token-submit").addEventListener("click", () => {
      const token = $("token-input").value.trim();
      if (!token) return;
      sessionStorage.setItem(TOKEN_KEY, token);
      $("token-input").value = "";
      $("token-panel").hidden = true;
      $("forget-token").hidden = false;
      showError("");
      loadSessions()
        .then(() => (state.session ? selectSession(state.session) : undefined))
        .catch(report);
    });
    $("forget-token").hidden = !sessionStorage.getItem(TOKEN_KEY);
    $("forget-token").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      $("forget-token").hidden = true;
    });
    loadSessions().catch(report);
  }

  start();
})();
