// Runs the docs site's search worker (Material for MkDocs, lunr inside) in node, as the browser does:
// one setup message with the built search_index.json, then queries. Used by tests/test_docs_site.py.
//
//   node search_worker.js WORKER INDEX QUERY...   -> one JSON line: the words of the index the worker's
//       token set lost ("missing") or invented ("extra"), and the number of results of each query
//       (null where the query threw)
//   node search_worker.js WORKER --keys           -> the trie keys of two different nodes that lunr 2.3.9
//       wrote alike ({"0": 3, "4": 3} and {"0": 343})
"use strict";
const fs = require("fs");
const vm = require("vm");

function load(workerPath) {
  let listener = null;
  const replies = [];
  const warnings = [];
  const ctx = {
    console: { warn: (...a) => warnings.push(a.map(String).join(" ")), log: console.log },
    addEventListener: (type, fn) => { listener = fn; },
    postMessage: (m) => replies.push(m),
  };
  ctx.self = ctx;
  vm.createContext(ctx);
  vm.runInContext(fs.readFileSync(workerPath, "utf8"), ctx);
  return { lunr: ctx.lunr, listener, replies, warnings };
}

async function main() {
  const [workerPath, indexPath, ...queries] = process.argv.slice(2);
  const w = load(workerPath);
  if (indexPath === "--keys") {
    const T = w.lunr.TokenSet;
    const node = (id, edges) => { const n = new T(); n.id = id; n.edges = edges; return n; };
    const n3 = node(3, {}), n343 = node(343, {});
    const a = node(1000, { "0": n3, "4": n3 }), b = node(1001, { "0": n343 });
    console.log(JSON.stringify({ a: a.toString(), b: b.toString() }));
    return;
  }
  let words = null, tokens = null;
  const fromArray = w.lunr.TokenSet.fromArray;
  w.lunr.TokenSet.fromArray = function (arr) {
    const set = fromArray.call(this, arr);
    words = arr.slice(); tokens = set.toArray();
    return set;
  };
  const data = JSON.parse(fs.readFileSync(indexPath, "utf8"));
  data.options = data.options || { suggest: false };
  await w.listener({ data: { type: 0, data } });   // setup: builds the index
  const want = new Set(words), got = new Set(tokens);
  const results = {};
  for (const q of queries) {
    const before = w.warnings.length;
    await w.listener({ data: { type: 2, data: q } });
    const reply = w.replies[w.replies.length - 1];
    results[q] = w.warnings.length > before ? null : reply.data.items.length;
  }
  console.log(JSON.stringify({
    words: want.size,
    missing: [...want].filter((x) => !got.has(x)),
    extra: [...got].filter((x) => !want.has(x)),
    results,
  }));
}

main().catch((e) => { console.error(e && e.stack); process.exit(1); });
