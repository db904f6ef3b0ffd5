// The interop workload (see workload.py, its twin, and README.md), for the
// Node driver and mongosh clients.
'use strict';
const N_DOCS = 300;

function doc(i) {
  return { _id: i, n: i, s: `item-${String(i).padStart(3, '0')}`, even: i % 2 === 0,
           sub: { k: i % 7, tags: [`t${i % 3}`, 'x'] } };
}

function initialDocs() {
  const out = [];
  for (let i = 0; i < N_DOCS; i++) out.push(doc(i));
  return out;
}

function finalDocs() {
  const out = [];
  for (const d of initialDocs()) {
    const i = d._id;
    if ((i >= 280 && i < 290) || (i % 2 === 1 && i < 20)) continue;
    if (i < 10) d.upd = 1;
    if (i >= 290) d.n = i + 1000;
    out.push(d);
  }
  return out;
}

// Key order matters for neither side: compare sorted-key JSON.
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = canon(v[k]);
    return o;
  }
  if (v && typeof v.valueOf === 'function') return v.valueOf();
  return v;
}

function check(got, want, what, fail) {
  const a = JSON.stringify(canon(got));
  const b = JSON.stringify(canon(want));
  if (a !== b) fail(`${what}: got ${a.slice(0, 300)}... expected ${b.slice(0, 300)}...`);
}

const PIPELINE = [{ $match: { n: { $lt: 100 } } },
                  { $group: { _id: '$even', total: { $sum: '$n' } } },
                  { $sort: { _id: 1 } }];
const AGGREGATE_RESULT = [{ _id: false, total: 2400 }, { _id: true, total: 2450 }];

module.exports = { N_DOCS, DB: 'interop', initialDocs, finalDocs, check, PIPELINE,
                   AGGREGATE_RESULT };
