package train

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/duel/data"
)

// DataRecord identifies the training split a run trained on: its classes,
// its number of images and the per-channel normalisation of its views.
// config.json records it (Config.TrainedOn) when a run starts. Resuming
// the run refuses a training split that no longer matches it, and opening
// the run's dataset (eval, analyze, embed) refuses one whose classes or
// size differ: adding a class folder to a folder dataset renumbers its
// classes, and adding images changes the normalisation computed from
// them. The run's normalisation is the recorded one (Run.Normalization).
type DataRecord struct {
	Classes []string `json:"classes"`
	Images  int      `json:"images"` // of the training split
	// Height and Width are the training images' (a folder dataset's
	// first image sets them: the others are resized to it).
	Height int       `json:"height"`
	Width  int       `json:"width"`
	Mean   []float32 `json:"mean"` // per channel, of the views (3 channels)
	Std    []float32 `json:"std"`
}

// recordData returns the record of the training split ds (3 channels),
// normalised with mean and std.
func recordData(ds *data.Dataset, mean, std []float32) *DataRecord {
	return &DataRecord{Classes: slices.Clone(ds.Classes), Images: ds.Len(), Height: ds.H, Width: ds.W, Mean: slices.Clone(mean), Std: slices.Clone(std)}
}

// differs describes how got, the record of the data found now, differs
// from r, the recorded one ("" when it does not); stats includes the
// normalisation.
func (r *DataRecord) differs(got *DataRecord, stats bool) string {
	switch {
	case !slices.Equal(got.Classes, r.Classes):
		return fmt.Sprintf("its classes are %q, the run trained on %q (a class added or removed renumbers them)", got.Classes, r.Classes)
	case got.Images != r.Images:
		return fmt.Sprintf("its training split has %d images, the run trained on %d", got.Images, r.Images)
	case r.Height > 0 && (got.Height != r.Height || got.Width != r.Width): // 0: recorded before the field existed
		return fmt.Sprintf("its training images are %dx%d, the run trained on %dx%d (a folder dataset's first image sets the size)", got.Height, got.Width, r.Height, r.Width)
	case stats && !(slices.Equal(got.Mean, r.Mean) && slices.Equal(got.Std, r.Std)):
		return fmt.Sprintf("its training images are normalised with mean %v and std %v, the run's with %v and %v (images replaced)", got.Mean, got.Std, r.Mean, r.Std)
	}
	return ""
}

// dataChanged is the error of a dataset that is not the one the run in
// dir trained on (how, from DataRecord.differs).
func dataChanged(c *Config, dir, how string) error {
	where := "--dataset " + c.Dataset
	if c.Data != "" {
		where += " --data " + c.Data
	}
	return fmt.Errorf("%s: not the data run %s trained on: %s (recorded in its %s as trained_on): restore the data it trained on, or train a new run",
		where, dir, how, ConfigFile)
}
