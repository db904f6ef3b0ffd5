// The interop workload with the MongoDB Go driver (go.mongodb.org/mongo-driver
// v1.17): the same steps as every other client of tests/interop/ (see
// tests/interop/README.md), checked against the expected results.
// Usage: interop-go URI COLLECTION
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

const nDocs = 300

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go client: "+format+"\n", args...)
	os.Exit(1)
}

func doc(i int) bson.D {
	return bson.D{
		{Key: "_id", Value: int32(i)},
		{Key: "n", Value: int32(i)},
		{Key: "s", Value: fmt.Sprintf("item-%03d", i)},
		{Key: "even", Value: i%2 == 0},
		{Key: "sub", Value: bson.D{
			{Key: "k", Value: int32(i % 7)},
			{Key: "tags", Value: bson.A{fmt.Sprintf("t%d", i%3), "x"}},
		}},
	}
}

func toInt(v interface{}) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	fail("not a number: %v", v)
	return 0
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: interop-go URI COLLECTION")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(os.Args[1]))
	if err != nil {
		fail("connect: %v", err)
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	coll := client.Database("interop").Collection(os.Args[2])
	_ = coll.Drop(ctx)

	// 1. insert_many: one insert command with a "documents" sequence.
	docs := make([]interface{}, nDocs)
	for i := range docs {
		docs[i] = doc(i)
	}
	ins, err := coll.InsertMany(ctx, docs)
	if err != nil || len(ins.InsertedIDs) != nDocs {
		fail("insert_many: %v", err)
	}

	// 2. bulk updates: an "updates" sequence.
	var ups []mongo.WriteModel
	for i := 0; i < 10; i++ {
		ups = append(ups, mongo.NewUpdateOneModel().
			SetFilter(bson.D{{Key: "_id", Value: int32(i)}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "upd", Value: int32(1)}}}}))
	}
	ups = append(ups, mongo.NewUpdateManyModel().
		SetFilter(bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: int32(290)}}}}).
		SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1000)}}}}))
	ur, err := coll.BulkWrite(ctx, ups)
	if err != nil || ur.MatchedCount != 20 || ur.ModifiedCount != 20 {
		fail("bulk update: %v %+v", err, ur)
	}

	// 3. bulk deletes: a "deletes" sequence.
	var dels []mongo.WriteModel
	for i := 280; i < 290; i++ {
		dels = append(dels, mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: int32(i)}}))
	}
	dels = append(dels, mongo.NewDeleteManyModel().SetFilter(bson.D{
		{Key: "even", Value: false}, {Key: "n", Value: bson.D{{Key: "$lt", Value: int32(20)}}}}))
	dr, err := coll.BulkWrite(ctx, dels)
	if err != nil || dr.DeletedCount != 20 {
		fail("bulk delete: %v %+v", err, dr)
	}

	// 4. find with batches of 50: a cursor with getMore.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(50))
	if err != nil {
		fail("find: %v", err)
	}
	var found []bson.M
	if err := cur.All(ctx, &found); err != nil {
		fail("find: %v", err)
	}
	if len(found) != 280 {
		fail("find returned %d documents, expected 280", len(found))
	}
	for _, d := range found {
		id := toInt(d["_id"])
		n := toInt(d["n"])
		want := id
		if id >= 290 {
			want = id + 1000
		}
		if n != want {
			fail("document %d has n=%d, expected %d", id, n, want)
		}
		_, upd := d["upd"]
		if upd != (id < 10) {
			fail("document %d: upd present=%v", id, upd)
		}
	}

	// 5. aggregate. (One accumulator per $group: FerretDB 1.24.2 computes only
	// the first of several $sum accumulators.)
	acur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: int32(100)}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$even"},
			{Key: "total", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		fail("aggregate: %v", err)
	}
	var agg []bson.M
	if err := acur.All(ctx, &agg); err != nil || len(agg) != 2 {
		fail("aggregate: %v %v", err, agg)
	}
	if agg[0]["_id"] != false || toInt(agg[0]["total"]) != 2400 ||
		agg[1]["_id"] != true || toInt(agg[1]["total"]) != 2450 {
		fail("aggregate gave %v, expected [{false 2400} {true 2450}]", agg)
	}
	fmt.Println("go client: OK inserted=300 updated=20 deleted=20 found=280 odd=2400 even=2450")
}
