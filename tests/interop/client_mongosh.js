// The interop workload in mongosh. Run as:
//   mongosh --quiet URI/interop --file client_mongosh.js
// with OPMSG_INTEROP_COLLECTION naming the collection and
// OPMSG_INTEROP_DIR this directory (mongosh's require() needs a full path).
const w = require(process.env.OPMSG_INTEROP_DIR + '/workload.js');
const name = process.env.OPMSG_INTEROP_COLLECTION;

function fail(msg) {
  print(`mongosh client: ${msg}`);
  quit(1);
}

const coll = db.getSiblingDB(w.DB).getCollection(name);
coll.drop();

const ins = coll.insertMany(w.initialDocs());
if (Object.keys(ins.insertedIds).length !== w.N_DOCS) fail('insertMany');

const ups = [];
for (let i = 0; i < 10; i++) {
  ups.push({ updateOne: { filter: { _id: i }, update: { $set: { upd: 1 } } } });
}
ups.push({ updateMany: { filter: { n: { $gte: 290 } }, update: { $inc: { n: 1000 } } } });
const ur = coll.bulkWrite(ups);
if (ur.matchedCount !== 20 || ur.modifiedCount !== 20) fail(`bulk update: ${JSON.stringify(ur)}`);

const dels = [];
for (let i = 280; i < 290; i++) dels.push({ deleteOne: { filter: { _id: i } } });
dels.push({ deleteMany: { filter: { even: false, n: { $lt: 20 } } } });
const dr = coll.bulkWrite(dels);
if (dr.deletedCount !== 20) fail(`bulk delete: ${JSON.stringify(dr)}`);

const found = coll.find({}).sort({ _id: 1 }).batchSize(50).toArray();
w.check(found, w.finalDocs(), 'find', fail);
const agg = coll.aggregate(w.PIPELINE).toArray();
w.check(agg, w.AGGREGATE_RESULT, 'aggregate', fail);
print('mongosh client: OK inserted=300 updated=20 deleted=20 found=280 odd=2400 even=2450');
