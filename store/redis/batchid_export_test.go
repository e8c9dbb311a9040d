package redis

// PackBatchID is packBatchID, for the tests that read Redis's records.
var PackBatchID = packBatchID
