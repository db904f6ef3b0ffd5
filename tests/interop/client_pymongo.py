"""The interop workload with pymongo (Debian's python3-pymongo).

Usage: python3 client_pymongo.py URI COLLECTION
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pymongo  # noqa: E402
from pymongo import DeleteMany, DeleteOne, UpdateMany, UpdateOne  # noqa: E402

import workload  # noqa: E402


def fail(msg):
    sys.stderr.write("pymongo client: %s\n" % msg)
    sys.exit(1)


def main():
    uri, name = sys.argv[1], sys.argv[2]
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=20000)
    coll = client[workload.DB][name]
    coll.drop()

    res = coll.insert_many(workload.initial_docs())
    if len(res.inserted_ids) != workload.N_DOCS:
        fail("insert_many inserted %d" % len(res.inserted_ids))

    ups = [UpdateOne({"_id": i}, {"$set": {"upd": 1}}) for i in range(10)]
    ups.append(UpdateMany({"n": {"$gte": 290}}, {"$inc": {"n": 1000}}))
    res = coll.bulk_write(ups)
    if res.matched_count != 20 or res.modified_count != 20:
        fail("bulk update: %r" % res.bulk_api_result)

    dels = [DeleteOne({"_id": i}) for i in range(280, 290)]
    dels.append(DeleteMany({"even": False, "n": {"$lt": 20}}))
    res = coll.bulk_write(dels)
    if res.deleted_count != 20:
        fail("bulk delete: %r" % res.bulk_api_result)

    found = list(coll.find({}, sort=[("_id", 1)], batch_size=50))
    if found != workload.final_docs():
        fail("find returned %d documents, not the expected ones" % len(found))

    agg = list(coll.aggregate(workload.PIPELINE))
    if agg != workload.AGGREGATE_RESULT:
        fail("aggregate gave %r" % agg)
    print("pymongo client: OK inserted=300 updated=20 deleted=20 found=280 "
          "odd=2400 even=2450")


if __name__ == "__main__":
    main()
