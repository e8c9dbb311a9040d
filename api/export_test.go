package api

// ProblemSlugs maps the slug of every problem type the API answers to its
// status, for the test that checks openapi.yaml lists the same.
func ProblemSlugs() map[string]int {
	m := map[string]int{
		internalProblem.slug:       internalProblem.status,
		outcomeUnknownProblem.slug: outcomeUnknownProblem.status,
	}
	for _, pt := range problemTypes {
		m[pt.slug] = pt.status
	}
	return m
}

// FastOrders and StrictOrders are the two parsers of a batch body, for
// FuzzFastOrders.
var (
	FastOrders   = fastOrders
	StrictOrders = strictOrders
)
