// The interop workload with the MongoDB Node.js driver (tests/interop/node).
// Usage: node client_node.js URI COLLECTION
'use strict';
const path = require('path');
const { MongoClient } = require(path.join(__dirname, 'node', 'node_modules', 'mongodb'));
const w = require('./workload.js');

function fail(msg) {
  process.stderr.write(`node client: ${msg}\n`);
  process.exit(1);
}

async function main() {
  const [uri, name] = process.argv.slice(2);
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 20000 });
  await client.connect();
  try {
    const coll = client.db(w.DB).collection(name);
    await coll.drop().catch(() => {});

    const ins = await coll.insertMany(w.initialDocs());
    if (ins.insertedCount !== w.N_DOCS) fail(`insertMany inserted ${ins.insertedCount}`);

    const ups = [];
    for (let i = 0; i < 10; i++) {
      ups.push({ updateOne: { filter: { _id: i }, update: { $set: { upd: 1 } } } });
    }
    ups.push({ updateMany: { filter: { n: { $gte: 290 } }, update: { $inc: { n: 1000 } } } });
    const ur = await coll.bulkWrite(ups);
    if (ur.matchedCount !== 20 || ur.modifiedCount !== 20) fail(`bulk update: ${JSON.stringify(ur)}`);

    const dels = [];
    for (let i = 280; i < 290; i++) dels.push({ deleteOne: { filter: { _id: i } } });
    dels.push({ deleteMany: { filter: { even: false, n: { $lt: 20 } } } });
    const dr = await coll.bulkWrite(dels);
    if (dr.deletedCount !== 20) fail(`bulk delete: ${JSON.stringify(dr)}`);

    const found = await coll.find({}).sort({ _id: 1 }).batchSize(50).toArray();
    w.check(found, w.finalDocs(), 'find', fail);

    const agg = await coll.aggregate(w.PIPELINE).toArray();
    w.check(agg, w.AGGREGATE_RESULT, 'aggregate', fail);
    console.log('node client: OK inserted=300 updated=20 deleted=20 found=280 odd=2400 even=2450');
  } finally {
    await client.close();
  }
}

main().catch((e) => fail(e.stack || String(e)));
