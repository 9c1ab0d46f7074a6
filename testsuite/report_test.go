package testsuite

import (
	"math"
	"math/big"
	"testing"
)

// binomialPassAtK is 1 - C(n-c,k)/C(n,k) in exact rational arithmetic,
// the definition PassAtK's product form must equal.
func binomialPassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	num := new(big.Int).Binomial(int64(n-c), int64(k))
	den := new(big.Int).Binomial(int64(n), int64(k))
	r := new(big.Rat).SetFrac(num, den)
	f, _ := new(big.Rat).Sub(big.NewRat(1, 1), r).Float64()
	return f
}

func TestPassAtK(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
	}{
		{5, 0, 5, 0},
		{5, 5, 5, 1},
		{5, 1, 1, 0.2},
		{5, 3, 1, 0.6},
		{5, 1, 5, 1},    // k = n: any pass passes
		{10, 1, 5, 0.5}, // 1 - C(9,5)/C(10,5) = 1 - 126/252
		{10, 2, 5, 1 - 56.0/252},
		{4, 1, 2, 0.5}, // 1 - C(3,2)/C(4,2) = 1 - 3/6
		{3, 1, 9, 1},   // k above n is n
		{0, 0, 5, 0},   // nothing ran
		{5, 9, 1, 1},   // c above n is n
	} {
		if got := PassAtK(tc.n, tc.c, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PassAtK(n=%d, c=%d, k=%d) = %v, want %v", tc.n, tc.c, tc.k, got, tc.want)
		}
	}
	// The product form equals the binomial definition everywhere, large n
	// included (C(200,100) is far beyond float64's exact integers).
	for _, n := range []int{1, 2, 7, 20, 200} {
		for c := 0; c <= n; c += max(1, n/7) {
			for k := 1; k <= n; k += max(1, n/5) {
				got, want := PassAtK(n, c, k), binomialPassAtK(n, c, k)
				if c == 0 {
					want = 0
				}
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("PassAtK(%d, %d, %d) = %v, the binomials say %v", n, c, k, got, want)
				}
			}
		}
	}
}
