"""The interop workload, shared by the test harness and the Python client.

Every client of tests/interop/ runs the same steps against a collection of
the "interop" database (see README.md); this module says what they send and
what the collection holds afterwards, so the harness can check the tap's log
and FerretDB's contents against it.
"""

N_DOCS = 300
DB = "interop"


def doc(i):
    return {"_id": i, "n": i, "s": "item-%03d" % i, "even": i % 2 == 0,
            "sub": {"k": i % 7, "tags": ["t%d" % (i % 3), "x"]}}


def initial_docs():
    return [doc(i) for i in range(N_DOCS)]


def final_docs():
    """The collection after the updates and deletes, sorted by _id."""
    out = []
    for d in initial_docs():
        i = d["_id"]
        if 280 <= i < 290 or (i % 2 == 1 and i < 20):
            continue
        if i < 10:
            d["upd"] = 1
        if i >= 290:
            d["n"] = i + 1000
        out.append(d)
    return out


# The aggregate: documents with n < 100 grouped by "even", sorted by _id.
# (One accumulator only: FerretDB 1.24.2 computes just the first of several
# $sum accumulators of a $group.)
PIPELINE = [{"$match": {"n": {"$lt": 100}}},
            {"$group": {"_id": "$even", "total": {"$sum": "$n"}}},
            {"$sort": {"_id": 1}}]
AGGREGATE_RESULT = [{"_id": False, "total": 2400}, {"_id": True, "total": 2450}]
