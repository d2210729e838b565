// Package eval measures how good a frozen encoder's features are for
// classification, with the two protocols of self-supervised learning:
//
//   - the linear probe of the paper's Appendix E ("The trained CNN layers of the
//     model were frozen, and only one linear layer was added to perform the
//     classification task. The training was carried out using the Adam
//     optimizer with a weight decay of 1e-6. The learning rate was set to 0.001
//     and the batch size was 256, and the training was performed for a total of
//     100 epochs."), see LinearProbe;
//   - the weighted k-nearest-neighbour classifier on cosine similarity used as a
//     training monitor by InstDisc (Wu et al., 2018; k = 200, temperature 0.07,
//     the defaults here) and solo-learn (WeightedKNNClassifier: k = 20 by
//     default), with a plain majority vote as an option, see KNN.
//
// Both work on Features: an N x D float32 matrix with one label per row,
// extracted once from a dataset split by Extract (the encoder in eval mode,
// plain normalised images, no augmentation) and then reused, so that the
// 100 epochs of the probe only cost a multiply of the cached features.
//
// # Devices
//
// Features are extracted on the encoder's device (the Encoder copies each
// batch in; Extract copies its features out) and kept on the host, where
// they are cached and subset. KNN multiplies them on KNNConfig.Device (the
// training rows copied in once, each chunk of test rows copied in),
// selects each test row's k nearest there (tensor.TopK: only the k
// similarities and indices per row are copied out) and votes on the host,
// adding the votes in one fixed order (larger similarity first, ties by
// lower index) on every device. LinearProbe trains its layer on LinearConfig.Device, each
// mini-batch copied in and the loss and test logits copied out. The zero
// device is the CPU, where nothing is copied; on a device with the CPU's
// kernels the results are the CPU's bits (device_test.go).
package eval
