package params

// RMSNorm is the name of the row-wise RMS normalisation family.
const RMSNorm = "rmsnorm"

func rmsnormFamily() *Family {
	return rowFamily(RMSNorm, "row-wise y = x / sqrt(mean(x²) + eps) · w over rows×cols")
}
