// The workbench report's behaviour: sort, filter, drill down into cells, compare two cells.
// Text from sessions and models is only ever written with textContent / createTextNode, never
// as markup, so a summary holding "<script>" shows as those characters.
"use strict";
(function () {
  const INDEX = JSON.parse(document.getElementById("wb-index").textContent);
  const table = document.getElementById("wb-table");
  const byId = new Map();
  const byGroup = new Map();
  INDEX.forEach(function (c) {
    byId.set(c.id, c);
    if (!byGroup.has(c.g)) byGroup.set(c.g, []);
    byGroup.get(c.g).push(c);
  });
  const chunks = new Map();

  function el(tag, props, children) {
    const node = document.createElement(tag);
    Object.entries(props || {}).forEach(function ([k, v]) {
      if (k === "text") node.textContent = v;
      else if (k === "cls") node.className = v;
      else node.setAttribute(k, v);
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function windowLabel(w) {
    if (w === null || w === undefined) return "none";
    const n = Number(w);
    if (!Number.isFinite(n)) return String(w);
    return n > 0 && n % 1024 === 0 ? n / 1024 + "k" : n.toLocaleString("en-US");
  }

  function num(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "—";
    return Number(v).toLocaleString("en-US", {maximumFractionDigits: digits || 0});
  }

  function pct(v) {
    return v === null || v === undefined ? "—" : (100 * v).toFixed(1) + "%";
  }

  function cellTitle(c) {
    return [c.session_id, c.template, c.model, windowLabel(c.window), "repeat " + c.repeat]
      .join(" · ");
  }

  // ---- payloads: one gzip + base64 block per chunk, decompressed on first use ----------------

  async function loadChunk(k) {
    if (!chunks.has(k)) {
      chunks.set(k, (async function () {
        const b64 = document.getElementById("wb-chunk-" + k).textContent.trim();
        const bin = atob(b64);
        const bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        return JSON.parse(await new Response(stream).text());
      })());
    }
    return chunks.get(k);
  }

  async function payload(id) {
    const c = byId.get(id);
    return (await loadChunk(c.k))[id];
  }

  // ---- a small Markdown renderer that builds nodes (headings, lists, code, paragraphs) --------

  function inline(text) {
    const frag = document.createDocumentFragment();
    const parts = text.split(/(`[^`]+`|\*\*[^*]+\*\*)/);
    parts.forEach(function (part) {
      if (!part) return;
      if (part.startsWith("`") && part.endsWith("`") && part.length > 1) {
        frag.appendChild(el("code", {text: part.slice(1, -1)}));
      } else if (part.startsWith("**") && part.endsWith("**") && part.length > 3) {
        frag.appendChild(el("b", {text: part.slice(2, -2)}));
      } else {
        frag.appendChild(document.createTextNode(part));
      }
    });
    return frag;
  }

  function renderMarkdown(text) {
    const root = el("div", {cls: "wb-summary"});
    const lines = text.split("\n");
    let list = null;
    let para = null;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith("```")) {
        const code = [];
        for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
        root.appendChild(el("pre", {text: code.join("\n")}));
        list = para = null;
        continue;
      }
      const head = /^(#{1,6})\s+(.*)$/.exec(line);
      const item = /^\s*(?:[-*]|\d+[.)])\s+(.*)$/.exec(line);
      if (head) {
        const h = el(head[1].length <= 2 ? "h4" : "h5");
        h.appendChild(inline(head[2]));
        root.appendChild(h);
        list = para = null;
      } else if (item) {
        if (!list) { list = el("ul"); root.appendChild(list); }
        const li = el("li");
        li.appendChild(inline(item[1]));
        list.appendChild(li);
        para = null;
      } else if (!line.trim()) {
        list = para = null;
      } else {
        if (!para) { para = el("p"); root.appendChild(para); } else para.appendChild(el("br"));
        para.appendChild(inline(line));
        list = null;
      }
    }
    return root;
  }

  // ---- a line diff (longest common subsequence) for two summaries side by side ---------------

  function lineDiff(a, b) {
    const n = a.length, m = b.length;
    if (n * m > 4000000) {  // too big for the table: mark lines absent from the other side
      const sa = new Set(a), sb = new Set(b);
      return [a.map(function (l) { return [l, sb.has(l) ? "same" : "del"]; }),
              b.map(function (l) { return [l, sa.has(l) ? "same" : "add"]; })];
    }
    const dp = Array.from({length: n + 1}, function () { return new Uint32Array(m + 1); });
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
      }
    }
    const left = [], right = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[i] === b[j]) { left.push([a[i++], "same"]); right.push([b[j++], "same"]); }
      else if (j < m && (i >= n || dp[i][j + 1] >= dp[i + 1][j])) right.push([b[j++], "add"]);
      else left.push([a[i++], "del"]);
    }
    return [left, right];
  }

  function diffPane(lines, title) {
    const pre = el("pre");
    lines.forEach(function ([text, kind]) {
      pre.appendChild(el("span", {cls: kind === "same" ? "" : "wb-" + kind, text: text}));
    });
    return el("div", {}, [el("h4", {text: title}), pre]);
  }

  // ---- one cell's panel ---------------------------------------------------------------------

  function section(title, body) {
    return el("div", {cls: "wb-sec"}, [el("h4", {text: title}), body]);
  }

  function missing(text) {
    return el("p", {cls: "wb-missing", text: text});
  }

  function attemptsTable(rows) {
    if (!rows.length) return missing("No model attempt was recorded for this cell.");
    const head = el("tr", {}, ["#", "removal", "input tok", "output tok", "outcome", "error"]
      .map(function (h) { return el("th", {text: h}); }));
    const body = rows.map(function (r) {
      return el("tr", {}, [
        el("td", {cls: "num", text: num(r[0])}), el("td", {cls: "num", text: r[1] === null ? "—" : r[1] + "%"}),
        el("td", {cls: "num", text: num(r[2])}), el("td", {cls: "num", text: num(r[3])}),
        el("td", {text: r[4] || "—"}), el("td", {text: r[5] || ""})]);
    });
    return el("table", {cls: "wb-plain"}, [el("thead", {}, [head]), el("tbody", {}, body)]);
  }

  function forgottenList(f) {
    if (f === null || f === undefined) return missing("Not computed for this cell (no summary or no session).");
    const kinds = Object.keys(f).filter(function (k) { return f[k] && f[k].length; });
    if (!kinds.length) return el("p", {text: "Nothing: every probed item is in the summary."});
    return el("ul", {}, kinds.map(function (k) {
      return el("li", {}, [el("b", {text: k + " (" + f[k].length + "): "}),
        f[k].join("; ")]);
    }));
  }

  function actionText(a) {
    if (!a) return "—";
    return a.tool === null ? "no tool call" : (a.tool + " " + (a.argument || "")).trim();
  }

  function judgeCell(j) {
    if (!j) return el("td", {text: "—"});
    const reasons = Object.keys(j.scores || {}).map(function (d) {
      return el("li", {text: d + ": " + j.scores[d] + (j.reasons && j.reasons[d] ? " — " + j.reasons[d] : "")});
    });
    return el("td", {}, [el("details", {}, [el("summary", {text: num(j.overall, 2) + " / 5"}),
      el("ul", {}, reasons)])]);
  }

  function qaSection(q) {
    if (!q) return missing("No questions were asked of this cell (the run has no [qa] table, or the cell failed first).");
    const box = el("div");
    const m = q.metrics || {};
    box.appendChild(el("p", {cls: "wb-note", text: "answerer " + (q.answerer || "—") +
      (q.judge ? " · judge " + q.judge : "") + " · exact questions right " + pct(m.qa_accuracy) +
      " · lost against the full history: exact " + (m.qa_loss_exact === undefined ? "n/a" : pct(m.qa_loss_exact)) +
      ", open " + (m.qa_loss_open === undefined ? "n/a" : pct(m.qa_loss_open)) +
      " · gained " + (m.qa_gain === undefined ? "n/a" : pct(m.qa_gain))}));
    const head = el("tr", {}, ["kind", "question", "expected", "answer", "grade", "full history", "judge"]
      .map(function (h) { return el("th", {text: h}); }));
    const rows = (q.questions || []).map(function (r) {
      const expected = Array.isArray(r.expected) ? r.expected.join("\n") : (r.expected || "");
      return el("tr", {}, [
        el("td", {text: r.kind || ""}), el("td", {text: r.question || ""}),
        el("td", {}, [el("pre", {text: expected + (r.reference && r.reference !== expected ? "\n(" + r.reference + ")" : "")})]),
        el("td", {}, [el("pre", {text: r.answer === null || r.answer === undefined ? "(not answered" + (r.note ? ": " + r.note : "") + ")" : r.answer})]),
        el("td", {cls: "num", text: (r.grade === null || r.grade === undefined ? "—" : pct(r.grade)) + (r.stale ? " (stale)" : "")}),
        el("td", {cls: "num", title: r.full_answer || "", text: r.full_grade === null || r.full_grade === undefined ? "—" : pct(r.full_grade)}),
        judgeCell(r.judge)]);
    });
    box.appendChild(el("table", {cls: "wb-plain wb-qa"}, [el("thead", {}, [head]), el("tbody", {}, rows)]));
    const na = q.next_action;
    if (na) {
      box.appendChild(el("p", {text: "Next action — recorded: " + actionText(na.recorded) +
        "; from the compacted context: " + actionText(na.action) + (na.match ? " (agrees)" : " (differs)") +
        "; from the full history: " + actionText(na.full_action)}));
    }
    (q.notes || []).forEach(function (n) { box.appendChild(el("p", {cls: "wb-note", text: n})); });
    return box;
  }

  async function openCell(id, host) {
    const c = byId.get(id);
    if (!c) return null;
    if (!host) {
      openRow(c.g);
      host = document.querySelector('tr.wb-detail[data-g="' + c.g + '"] .wb-panel-host');
    }
    host.querySelectorAll("tr.wb-current").forEach(function (r) { r.classList.remove("wb-current"); });
    const pick = host.parentNode.querySelector('tr[data-cell="' + CSS.escape(id) + '"]');
    if (pick) pick.classList.add("wb-current");
    const p = await payload(id);
    const panel = el("div", {cls: "wb-panel", "data-cell": id});
    panel.appendChild(el("h4", {text: cellTitle(c)}));
    panel.appendChild(el("p", {cls: "wb-note", text: "status " + c.status + " · parse outcome " +
      (c.parse_outcome || "—") + " · retained " + num(c.retained_tokens) + " tok · summary " +
      num(c.summary_tokens) + " tok · recall " + pct(c.probe_recall)}));
    if (p.error) panel.appendChild(section("Error", el("pre", {text: (p.error.type || "") + ": " + (p.error.message || "")})));
    const others = INDEX.filter(function (o) {
      return o.session_id === c.session_id && o.repeat === c.repeat && o.id !== id;
    });
    if (others.length) {
      const select = el("select", {"aria-label": "compare with"},
        [el("option", {value: "", text: "compare side by side with…"})].concat(others.map(function (o) {
          return el("option", {value: o.id, text: [o.template, o.model, windowLabel(o.window)].join(" · ")});
        })));
      const diffHost = el("div");
      select.addEventListener("change", function () {
        diffHost.textContent = "";
        if (select.value) compare(id, select.value, diffHost);
      });
      panel.appendChild(el("p", {}, [select]));
      panel.appendChild(diffHost);
    }
    const cols = el("div", {cls: "wb-cols"});
    cols.appendChild(section("Summary (rendered)", p.summary === null ? missing("No summary was written for this cell.") : renderMarkdown(p.summary)));
    cols.appendChild(section("Raw reply", p.raw === null ? missing("The raw model reply was not stored for this run.") : el("pre", {text: p.raw})));
    panel.appendChild(cols);
    panel.appendChild(section("Removal ladder attempts", attemptsTable(p.attempts || [])));
    panel.appendChild(section("What the summary forgot", forgottenList(p.forgotten)));
    if (p.qa !== undefined) panel.appendChild(section("Questions answered from the compacted context", qaSection(p.qa)));
    host.textContent = "";
    host.appendChild(panel);
    return panel;
  }

  async function compare(idA, idB, host) {
    const [a, b] = await Promise.all([payload(idA), payload(idB)]);
    const ta = (a.summary || "").split("\n"), tb = (b.summary || "").split("\n");
    const [left, right] = lineDiff(ta, tb);
    const box = el("div", {cls: "wb-diff", "data-a": idA, "data-b": idB},
      [diffPane(left, cellTitle(byId.get(idA))), diffPane(right, cellTitle(byId.get(idB)))]);
    host.textContent = "";
    host.appendChild(box);
    return box;
  }

  // ---- rows: open a row's cells ----------------------------------------------------------------

  const columnCount = table.querySelector("tbody tr") ?
    table.querySelector("tbody tr").children.length : 1;

  function openRow(g, toggle) {
    const row = table.querySelector('tr.wb-row[data-g="' + g + '"]');
    if (!row) return null;
    const next = row.nextElementSibling;
    if (next && next.classList.contains("wb-detail")) {
      if (toggle) { next.remove(); row.classList.remove("wb-open"); }
      return next;
    }
    row.classList.add("wb-open");
    const list = (byGroup.get(Number(g)) || []);
    const head = el("tr", {}, ["session", "repeat", "status", "parse", "retained tok", "summary tok",
      "retries", "recall", "error"].map(function (h) { return el("th", {text: h}); }));
    const rows = list.map(function (c) {
      const tr = el("tr", {"data-cell": c.id, title: "open " + cellTitle(c)}, [
        el("td", {text: c.session_id}), el("td", {cls: "num", text: num(c.repeat)}),
        el("td", {cls: c.status === "error" ? "wb-status-error" : "", text: c.status || "—"}),
        el("td", {text: c.parse_outcome || "—"}), el("td", {cls: "num", text: num(c.retained_tokens)}),
        el("td", {cls: "num", text: num(c.summary_tokens)}), el("td", {cls: "num", text: num(c.retries)}),
        el("td", {cls: "num", text: pct(c.probe_recall)}), el("td", {text: c.error_type || ""})]);
      return tr;
    });
    const host = el("div", {cls: "wb-panel-host"});
    const cellsTable = el("table", {cls: "wb-cells"}, [el("thead", {}, [head]), el("tbody", {}, rows)]);
    cellsTable.addEventListener("click", function (ev) {
      const tr = ev.target.closest("tr[data-cell]");
      if (tr) openCell(tr.getAttribute("data-cell"), host);
    });
    const td = el("td", {colspan: String(columnCount)}, [
      el("p", {cls: "wb-note", text: list.length + " cells; click one to see its summary, raw reply, ladder and what it forgot."}),
      cellsTable, host]);
    const detail = el("tr", {cls: "wb-detail", "data-g": String(g)}, [td]);
    row.after(detail);
    return detail;
  }

  table.querySelector("tbody").addEventListener("click", function (ev) {
    const row = ev.target.closest("tr.wb-row");
    if (row) openRow(row.getAttribute("data-g"), true);
  });

  // ---- sorting and filtering -------------------------------------------------------------------

  const heads = Array.from(table.querySelectorAll("thead th[data-col]"));
  function fullValue(row, col) {
    const td = cellOf(row, col);
    return td.getAttribute("title") || td.textContent;
  }
  function cellOf(row, col) { return row.children[heads.findIndex(function (h) { return h.dataset.col === col; }) + 1]; }

  heads.forEach(function (th, idx) {
    th.addEventListener("click", function () {
      const asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      const numeric = th.dataset.kind === "num" || th.dataset.col === "window";
      const tbody = table.querySelector("tbody");
      const rows = Array.from(tbody.querySelectorAll("tr.wb-row"));
      const key = function (r) {
        const v = r.children[idx + 1].dataset.v;
        if (!numeric) return v;
        const n = parseFloat(v);
        return Number.isNaN(n) ? Infinity : n;
      };
      rows.sort(function (a, b) {
        const ka = key(a), kb = key(b);
        const c = ka < kb ? -1 : ka > kb ? 1 : 0;
        return asc ? c : -c;
      });
      rows.forEach(function (r) {
        const detail = r.nextElementSibling && r.nextElementSibling.classList.contains("wb-detail") ? r.nextElementSibling : null;
        tbody.appendChild(r);
        if (detail) tbody.appendChild(detail);
      });
    });
  });

  const filterBox = document.getElementById("wb-filter");
  const selects = [];
  ["template", "model", "window"].forEach(function (col) {
    const th = heads.find(function (h) { return h.dataset.col === col; });
    if (!th) return;
    const labels = new Map();  // full value -> the (maybe shortened) text shown in the table
    table.querySelectorAll("tr.wb-row").forEach(function (r) {
      labels.set(fullValue(r, col), cellOf(r, col).textContent);
    });
    const select = el("select", {"aria-label": "filter " + col},
      [el("option", {value: "", text: "all " + col + "s"})].concat(Array.from(labels).map(function ([v, text]) {
        return el("option", {value: v, text: text, title: v});
      })));
    select.dataset.col = col;
    select.addEventListener("change", applyFilter);
    selects.push(select);
    document.getElementById("wb-selects").appendChild(select);
  });

  function applyFilter() {
    const words = filterBox.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    const rows = Array.from(table.querySelectorAll("tr.wb-row"));
    rows.forEach(function (r) {
      const text = Array.from(r.children).map(function (td) {
        return (td.textContent + " " + (td.getAttribute("title") || "")).toLowerCase();
      }).join(" ");
      const ok = words.every(function (w) { return text.includes(w); }) &&
        selects.every(function (s) { return !s.value || fullValue(r, s.dataset.col) === s.value; });
      r.classList.toggle("wb-hidden", !ok);
      const detail = r.nextElementSibling;
      if (detail && detail.classList.contains("wb-detail")) detail.classList.toggle("wb-hidden", !ok);
      if (ok) shown++;
    });
    document.getElementById("wb-count").textContent = shown + " of " + rows.length + " rows";
  }
  filterBox.addEventListener("input", applyFilter);
  applyFilter();

  // ---- column groups: a checkbox each; groups hidden while the table is wider than the page --

  const groupBox = document.getElementById("wb-groups");
  const groupChecks = new Map();
  function setGroup(g, visible) {
    table.querySelectorAll(".wb-c-" + g).forEach(function (n) { n.classList.toggle("wb-col-off", !visible); });
    if (groupChecks.has(g)) groupChecks.get(g).checked = visible;
  }
  Array.from(table.querySelectorAll("thead th[data-group]")).forEach(function (th) {
    const g = th.dataset.group;
    if (g === "variant") return;
    const box = el("input", {type: "checkbox"});
    box.checked = true;
    box.addEventListener("change", function () { setGroup(g, box.checked); });
    groupChecks.set(g, box);
    groupBox.appendChild(el("label", {}, [box, th.textContent || g]));
  });
  function fitWidth() {
    const room = table.parentElement.clientWidth;
    const order = (table.dataset.hideFirst || "").split(" ").filter(function (g) { return groupChecks.has(g); });
    const hidden = [];
    for (const g of order) {
      if (table.scrollWidth <= room) break;
      if (groupChecks.get(g).checked) { setGroup(g, false); hidden.push(table.querySelector('th[data-group="' + g + '"]').textContent || g); }
    }
    document.getElementById("wb-fit").textContent = hidden.length ?
      "Hidden to fit the page: " + hidden.join(", ") + " (tick to show)." : "";
  }
  fitWidth();

  // ---- links: #cell=<id> opens that cell ------------------------------------------------------

  function fromHash() {
    const m = /^#cell=([\w-]+)$/.exec(location.hash);
    if (m && byId.has(m[1])) openCell(m[1]).then(function (panel) {
      if (panel) panel.scrollIntoView();
    });
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();

  window.wbReport = {openRow: openRow, openCell: openCell, compare: compare, lineDiff: lineDiff,
    cells: INDEX};
  document.documentElement.setAttribute("data-wb-ready", "1");
})();
