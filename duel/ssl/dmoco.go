package ssl

func init() {
	Register("dmoco", Info{
		Memory: true, Momentum: true, Contrastive: true,
		Negatives: NegMemory, Policy: "duel",
		Summary: "D-MoCo: MoCo v2 whose memory of keys is managed by the DUEL policy instead of a FIFO queue",
	}, func(cfg Config) (Method, error) { return newMoCo("dmoco", cfg) })
}

// D-MoCo (the paper's Section 4.3 and Appendix E.1) is MoCo with another
// memory policy: the keys enter an active memory of K rows whose policy
// (DUEL by default, --policy chooses) evicts the most duplicated row instead
// of the oldest. Everything else is MoCo; see MoCo in moco.go.
