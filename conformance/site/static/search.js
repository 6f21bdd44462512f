/* The index page's search: filters and ranks the cases of window.CONFORMANCE_INDEX (search-index.js) by the
   words of the query (read as code: see terms), each of which must occur in a case's id, title, code, cause
   or topic.  Without this
   script the page lists every case all the same. */
(function () {
  "use strict";
  var index = window.CONFORMANCE_INDEX || [];
  // Where a word is found, and how much that counts: the case's name and title, then its code, cause, topic.
  var FIELDS = [["id", 6], ["title", 5], ["code", 4], ["cause", 3], ["topic", 2]];
  var input = document.getElementById("q");
  var form = document.getElementById("search");
  var results = document.getElementById("results");
  var count = document.getElementById("count");
  var catalogue = document.getElementById("catalogue");
  if (!input || !results) { return; }

  index.forEach(function (entry, order) {
    var code = entry.code.map(function (pair) { return pair[1]; }).join("\n");
    entry.order = order;
    entry.hay = {id: entry.id.toLowerCase(), title: entry.title.toLowerCase(), code: code.toLowerCase(),
                 cause: (entry.cause || "").toLowerCase(),
                 topic: (entry.topic + " " + entry.topicTitle).toLowerCase()};
  });

  // A query is read as code: `a.data *= 3` looks for `.data` and `*=`, `t.add_(1)` for `.add_(`, whatever the
  // reader named their tensors or wrote as numbers.  In a piece of code, a name used as an object (`a.`), a
  // name alone (`a` in `f(a)`) and a number are the reader's own and dropped; an attribute or method keeps
  // its dot, a call its parenthesis, a keyword argument its `=`; an operator with `=` in it is kept (not `=`
  // alone).  A plain word (`detach`, `from_numpy`) is looked for as it is.
  var TOKEN = /[a-z_][a-z0-9_]*|[0-9][0-9_]*(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?|[^\sa-z0-9_]+/g;

  function codeTerms(chunk) {
    var tokens = chunk.match(TOKEN) || [];
    var kept = [];
    for (var i = 0; i < tokens.length; i++) {
      var token = tokens[i], before = tokens[i - 1] || "", after = tokens[i + 1] || "";
      if (/^[a-z_]/.test(token)) {
        var attribute = /\.$/.test(before);
        if (/^\(/.test(after)) { kept.push((attribute ? "." : "") + token + "("); }
        else if (/^=(?!=)/.test(after)) { kept.push(token + "="); }
        else if (attribute) { kept.push("." + token); }
      } else if (/^[^0-9]/.test(token) && /=/.test(token) && token !== "=" && !/^[.(),\[\]]*=$/.test(token)) {
        kept.push(token.replace(/^[.()\[\],]+/, ""));
      }
    }
    return kept;
  }

  function terms(query) {
    var words = [];
    query.toLowerCase().split(/\s+/).forEach(function (chunk) {
      if (!chunk) { return; }
      if (/^[a-z_][a-z0-9_]*$/.test(chunk)) { words.push(chunk); return; }
      codeTerms(chunk).forEach(function (word) { if (words.indexOf(word) < 0) { words.push(word); } });
    });
    return words;
  }

  // Every word must occur somewhere; a word counts the weight of each field it occurs in, so a case whose
  // code holds what was typed ranks above one that only names it in its title.
  function score(entry, words) {
    var total = 0;
    for (var i = 0; i < words.length; i++) {
      var found = 0;
      for (var j = 0; j < FIELDS.length; j++) {
        if (entry.hay[FIELDS[j][0]].indexOf(words[i]) >= 0) { found += FIELDS[j][1]; }
      }
      if (found === 0) { return 0; }
      total += found;
    }
    return total;
  }

  // The first line of a framework's code that holds the first word: what the reader typed, in context.
  function snippet(entry, word) {
    for (var i = 0; i < entry.code.length; i++) {
      var lines = entry.code[i][1].split("\n");
      for (var j = 0; j < lines.length; j++) {
        if (lines[j].toLowerCase().indexOf(word) >= 0) { return entry.code[i][0] + ": " + lines[j].trim(); }
      }
    }
    return "";
  }

  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text) { node.textContent = text; }
    if (className) { node.className = className; }
    return node;
  }

  function item(entry, words) {
    var li = element("li");
    li.setAttribute("data-case", entry.id);
    var link = element("a", entry.title);
    link.href = entry.url;
    li.appendChild(link);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(element("code", entry.id));
    var today = element("span", "", "mini");
    entry.today.forEach(function (cell) {
      today.appendChild(document.createTextNode(" "));
      var badge = element("span", cell[0] + " " + cell[4], "o o-" + cell[2]);
      badge.title = cell[0] + " " + cell[1] + ": " + cell[3];
      today.appendChild(badge);
    });
    li.appendChild(document.createTextNode(" "));
    li.appendChild(today);
    li.appendChild(element("div", entry.topic + ": " + entry.topicTitle, "mini"));
    var line = snippet(entry, words[0]);
    if (line) { li.appendChild(element("pre", line)); }
    return li;
  }

  function update(query) {
    var words = terms(query);
    results.textContent = "";
    if (words.length === 0) {
      results.hidden = true;
      count.textContent = "";
      if (catalogue) { catalogue.hidden = false; }
      return;
    }
    var found = [];
    index.forEach(function (entry) {
      var value = score(entry, words);
      if (value > 0) { found.push([value, entry]); }
    });
    // the hand-written cases first (each cites its source and has a remedy), then those the fuzzer found;
    // within each, the best match first
    found.sort(function (a, b) {
      return Number(a[1].generated) - Number(b[1].generated) || b[0] - a[0] || a[1].order - b[1].order;
    });
    found.forEach(function (pair) { results.appendChild(item(pair[1], words)); });
    count.textContent = found.length + (found.length === 1 ? " case matches " : " cases match ") + "\u201c" +
      query.trim() + "\u201d";
    results.hidden = false;
    if (catalogue) { catalogue.hidden = true; }
  }

  function remember(query) {
    try {  // a page opened from file:// may refuse to change its address: the search works all the same
      var url = new URL(window.location.href);
      if (query.trim()) { url.searchParams.set("q", query.trim()); } else { url.searchParams.delete("q"); }
      window.history.replaceState(null, "", url.toString());
    } catch (error) { /* keep the address as it is */ }
  }

  input.addEventListener("input", function () { update(input.value); });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    update(input.value);
    remember(input.value);
  });
  document.querySelectorAll("a[data-query]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      input.value = link.getAttribute("data-query");
      update(input.value);
      remember(input.value);
    });
  });
  var given = new URLSearchParams(window.location.search).get("q");
  if (given) { input.value = given; }
  update(input.value);
}());
