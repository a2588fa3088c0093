package params

// Softmax is the name of the row-wise softmax family.
const Softmax = "softmax"

func softmaxFamily() *Family {
	return rowFamily(Softmax, "row-wise, numerically stable softmax of rows×cols")
}
