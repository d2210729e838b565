// Package analysis measures a trained run's active memory and latent space as
// the paper does (Section 5, Table 2, Appendix F.2), embeds features in two
// dimensions with t-SNE, draws the plots and writes report.md.
//
//   - ClassEntropy: the entropy in nats of the class distribution of the rows
//     held in memory (Table 2, "Class Entropy"; Fig. F.2a).
//   - Cluster: intra-class variance (Eq. v-intra) and inter-class similarity
//     (Eq. d-inter) of L2-normalised features, overall and per class
//     (Table 2; the class-wise metrics of Fig. F.2b-c).
//   - TSNE: exact t-SNE (van der Maaten and Hinton, 2008) for up to a few
//     thousand points (Fig. 3).
//   - Plots (PNG, gonum.org/v1/plot): t-SNE scatter coloured by class, class
//     frequency in memory sorted in descending order (Fig. F.3), training
//     curves from metrics.jsonl.
//   - Report: report.md.
//
// Every file is written atomically (temporary file in the same directory,
// then rename).
package analysis
