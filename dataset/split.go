package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Split is a partition of labelled nodes into training, validation and test
// sets. Each list is sorted ascending and the three are disjoint.
type Split struct {
	Name             string
	Train, Val, Test []int32
}

// AutoStratified is the split "auto" takes for a dataset that ships none:
// a seeded stratified 60/20/20 split. Fractions rather than Shchur et al.'s
// fixed per-class counts (random:20:30), because they work for any class
// size (a class of n ≥ 1 nodes gets round(0.6·n) ≥ 1 training nodes) and
// give user graphs the common fully supervised setting; the shchur recipe
// asks for random:20:30 on the datasets it was published for.
const AutoStratified = "frac:0.6:0.2"

// SplitSpecs documents the forms Dataset.Split accepts.
const SplitSpecs = `auto            the dataset's own split (public) if it ships one, else ` + AutoStratified + ` (stratified 60/20/20), seeded
public          the split shipped with the dataset (Planetoid's for Cora/CiteSeer; split 0 for Tolokers)
public:K        fixed split K where the source ships several (Tolokers: 0-9)
geom-gcn:K      Geom-GCN 60/20/20 split K for Cora/CiteSeer loaded from a data directory
random:T:V      T training and V validation nodes per class, the rest test (Shchur et al. 2018), seeded
frac:T:V        fractions T and V of each class for training and validation, the rest test (stratified), seeded
file:PATH[:K]   train/val/test masks from an .npz file; K picks row K of 2-D masks;
                or a text file of "id,set" lines (set: train, val or test) keyed by node id`

// Split resolves a split specification (see SplitSpecs; "" is auto)
// against d. The returned split's Name is the spec resolved: auto becomes
// public or AutoStratified. Seeded specs depend only on seed, the labels
// and the spec. Unlabelled nodes are never placed in a split, and a split
// that leaves a class with no training node is an error.
func (d *Dataset) Split(spec string, seed uint64) (Split, error) {
	if d.Labels == nil {
		return Split{}, fmt.Errorf("dataset %s has no labels, so it has no splits", d.Name)
	}
	if spec == "" || spec == "auto" {
		spec = d.AutoSplit()
		if spec == AutoStratified {
			s, err := d.Split(spec, seed)
			if err != nil {
				return Split{}, fmt.Errorf("split auto (%s, as %s ships no split): %w", spec, d.Name, err)
			}
			return s, nil
		}
	}
	f, err := parseSplit(spec)
	if err != nil {
		return Split{}, err
	}
	var s Split
	switch f.kind {
	case "public", "geom-gcn":
		s, err = d.fixedSplit(spec)
	case "random":
		s, err = d.randomSplit(int(f.train), int(f.val), seed)
	case "frac":
		s, err = d.fracSplit(f.train, f.val, seed)
	case "file":
		path, row := f.rest, -1
		if i := strings.LastIndexByte(f.rest, ':'); i >= 0 {
			if k, convErr := strconv.Atoi(f.rest[i+1:]); convErr == nil {
				path, row = f.rest[:i], k
			}
		}
		if strings.HasSuffix(path, ".npz") {
			s, err = ReadMaskSplit(path, row, d)
		} else {
			s, err = d.readSplitText(f.rest)
		}
	}
	if err != nil {
		return Split{}, err
	}
	s.Name = spec
	if err := s.check(d); err != nil {
		return Split{}, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if err := s.coversClasses(d); err != nil {
		return Split{}, fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	return s, nil
}

// CheckSplitSpec checks the form of a split specification without a
// dataset: an unknown kind, or counts or fractions that are not numbers
// or out of range, are the errors Split would return. Whether the
// dataset ships the split named, or has the nodes it asks for, Split
// alone can tell.
func CheckSplitSpec(spec string) error {
	if spec == "" || spec == "auto" {
		return nil
	}
	_, err := parseSplit(spec)
	return err
}

// splitFormNames lists SplitSpecs' forms by name: "auto, public, …, or
// file:PATH[:K]".
func splitFormNames() string {
	var names []string
	for _, line := range strings.Split(SplitSpecs, "\n") {
		if name, _, _ := strings.Cut(line, " "); name != "" {
			names = append(names, name)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// splitForm is a split specification read: its kind, the text after the
// kind's colon, and random's counts or frac's fractions.
type splitForm struct {
	kind, rest string
	train, val float64
}

// parseSplit reads a split specification other than auto.
func parseSplit(spec string) (splitForm, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	f := splitForm{kind: kind, rest: rest}
	switch kind {
	case "public", "geom-gcn", "file":
	case "random":
		t, v, err := twoInts(rest)
		if err != nil {
			return f, fmt.Errorf("split %q: %w (want random:TRAIN_PER_CLASS:VAL_PER_CLASS)", spec, err)
		}
		if t <= 0 || v < 0 {
			return f, fmt.Errorf("random split needs a positive training count per class, got %d:%d", t, v)
		}
		f.train, f.val = float64(t), float64(v)
	case "frac":
		t, v, err := twoFractions(rest)
		if err != nil {
			return f, fmt.Errorf("split %q: %w (want frac:TRAIN:VAL with fractions summing to at most 1)", spec, err)
		}
		f.train, f.val = t, v
	default:
		return f, fmt.Errorf("unknown split %q (want %s)", spec, splitFormNames())
	}
	return f, nil
}

// AutoSplit is the spec "auto" stands for on d: "public" when d ships
// fixed splits, else AutoStratified.
func (d *Dataset) AutoSplit() string {
	if len(d.Splits) > 0 {
		return "public"
	}
	return AutoStratified
}

func (d *Dataset) fixedSplit(spec string) (Split, error) {
	name := spec
	if name == "public:0" {
		name = "public"
	}
	var names []string
	for _, s := range d.Splits {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return Split{}, fmt.Errorf("dataset %s ships no fixed split, so there is no split %q; use auto (here %s: stratified 60/20/20), random:TRAIN:VAL per class or frac:TRAIN:VAL", d.Name, spec, AutoStratified)
	}
	return Split{}, fmt.Errorf("dataset %s has no split %q; it ships %s", d.Name, spec, strings.Join(names, ", "))
}

// byClass lists the labelled nodes of each class, ascending.
func (d *Dataset) byClass() [][]int32 {
	classes := make([][]int32, d.NumClasses)
	for v, y := range d.Labels {
		if y >= 0 {
			classes[y] = append(classes[y], int32(v))
		}
	}
	return classes
}

// splitRNG derives the generator for a seeded split; the second word keeps
// split streams apart from other users of the same seed.
func splitRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed5b117))
}

func (d *Dataset) randomSplit(trainPer, valPer int, seed uint64) (Split, error) {
	if trainPer <= 0 || valPer < 0 {
		return Split{}, fmt.Errorf("random split needs a positive training count per class, got %d:%d", trainPer, valPer)
	}
	classes := d.byClass()
	smallest := 0
	for c, nodes := range classes {
		if len(nodes) < len(classes[smallest]) {
			smallest = c
		}
	}
	if n := len(classes[smallest]); n < trainPer+valPer {
		return Split{}, fmt.Errorf("random:%d:%d: class %s has only %d labelled nodes, fewer than the %d it asks for; use smaller counts or fractions (frac:TRAIN:VAL)", trainPer, valPer, d.className(smallest), n, trainPer+valPer)
	}
	rng := splitRNG(seed)
	var s Split
	for _, nodes := range classes {
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		s.Train = append(s.Train, nodes[:trainPer]...)
		s.Val = append(s.Val, nodes[trainPer:trainPer+valPer]...)
		s.Test = append(s.Test, nodes[trainPer+valPer:]...)
	}
	s.sort()
	return s, nil
}

// fracSplit is stratified: each class is split by the fractions on its own
// (rounded to the nearest node), so class proportions match across sets.
func (d *Dataset) fracSplit(trainFrac, valFrac float64, seed uint64) (Split, error) {
	rng := splitRNG(seed)
	var s Split
	for c, nodes := range d.byClass() {
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		nt := int(math.Round(trainFrac * float64(len(nodes))))
		if nt == 0 && len(nodes) > 0 {
			need := int(math.Ceil(0.5 / trainFrac))
			return Split{}, fmt.Errorf("frac:%g:%g: class %s has only %d labelled nodes, and a training fraction of %g gives it none (it needs %d); raise the training fraction", trainFrac, valFrac, d.className(c), len(nodes), trainFrac, need)
		}
		nv := min(int(math.Round(valFrac*float64(len(nodes)))), len(nodes)-nt)
		s.Train = append(s.Train, nodes[:nt]...)
		s.Val = append(s.Val, nodes[nt:nt+nv]...)
		s.Test = append(s.Test, nodes[nt+nv:]...)
	}
	s.sort()
	return s, nil
}

func (s *Split) sort() {
	slices.Sort(s.Train)
	slices.Sort(s.Val)
	slices.Sort(s.Test)
}

func (d *Dataset) className(c int) string {
	if c < len(d.ClassNames) {
		return strconv.Quote(d.ClassNames[c])
	}
	return strconv.Itoa(c)
}

// check verifies that the split's nodes exist, are labelled and appear once.
func (s *Split) check(d *Dataset) error {
	seen := make([]uint8, d.Graph.N)
	for _, part := range []struct {
		name  string
		nodes []int32
	}{{"train", s.Train}, {"val", s.Val}, {"test", s.Test}} {
		for _, v := range part.nodes {
			if v < 0 || int(v) >= d.Graph.N {
				return fmt.Errorf("split %s: %s node %d outside [0, %d)", s.Name, part.name, v, d.Graph.N)
			}
			if d.Labels == nil || d.Labels[v] < 0 {
				return fmt.Errorf("split %s: %s node %d has no label", s.Name, part.name, v)
			}
			if seen[v] != 0 {
				return fmt.Errorf("split %s: node %d appears in more than one set (or twice in %s)", s.Name, v, part.name)
			}
			seen[v] = 1
		}
	}
	return nil
}

// coversClasses rejects a split whose training set misses a class: a model
// can never predict a class it is not trained on, and accuracy on it would
// silently be zero.
func (s *Split) coversClasses(d *Dataset) error {
	has := make([]bool, d.NumClasses)
	for _, v := range s.Train {
		has[d.Labels[v]] = true
	}
	for c, ok := range has {
		if ok {
			continue
		}
		size := 0
		for _, y := range d.Labels {
			if int(y) == c {
				size++
			}
		}
		if size == 0 {
			hint := ""
			if c >= len(d.ClassNames) || isInteger(d.ClassNames[c]) {
				hint = fmt.Sprintf("; integer labels are class numbers 0..%d, so labels that start at 1 or skip a number leave a class empty: number the classes from 0 without gaps, or give them as names", d.NumClasses-1)
			}
			return fmt.Errorf("class %s has no labelled nodes, so no split can train it (a split needs training nodes in every class)%s", d.className(c), hint)
		}
		return fmt.Errorf("split %s leaves class %s (%d labelled nodes) with no training nodes; a split needs training nodes in every class", s.Name, d.className(c), size)
	}
	return nil
}

func twoInts(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("missing ':'")
	}
	x, errX := strconv.Atoi(strings.TrimSpace(a))
	y, errY := strconv.Atoi(strings.TrimSpace(b))
	if errX != nil || errY != nil {
		return 0, 0, fmt.Errorf("%q and %q are not both whole numbers", a, b)
	}
	return x, y, nil
}

func twoFractions(s string) (float64, float64, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("missing ':'")
	}
	x, errX := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, errY := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if errX != nil || errY != nil {
		return 0, 0, fmt.Errorf("%q and %q are not both numbers", a, b)
	}
	if !(x > 0 && y >= 0 && x+y <= 1) {
		return 0, 0, fmt.Errorf("fractions %v and %v out of range", x, y)
	}
	return x, y, nil
}

// ReadMaskSplit reads train/val/test masks (train_mask, val_mask, test_mask,
// or the plural names Tolokers uses) from an .npz file and maps them onto d.
// Masks may be 1-D (one split; row must be -1 or 0) or 2-D (one split per
// row; row picks one). Positions are mapped through d.MaskOrder when set.
// Unlabelled nodes in a mask are left out: Geom-GCN's CiteSeer masks include
// the 15 featureless nodes, which its code trains on as class 0.
func ReadMaskSplit(path string, row int, d *Dataset) (Split, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Split{}, err
	}
	z, err := parseNPZ(path, b, func(z *NPZ) error {
		c := headerCheck{z: z}
		c.masks(d.Graph.N) // before inflating masks of another graph's size
		c.keep(maskArrays)
		return c.err
	})
	if err != nil {
		return Split{}, err
	}
	return masksSplit(z, "", row, d)
}

// masksSplit extracts split row from the masks in z; suffix is "" to accept
// either train_mask or train_masks.
func masksSplit(z *NPZ, name string, row int, d *Dataset) (Split, error) {
	s := Split{Name: name}
	lists := []*[]int32{&s.Train, &s.Val, &s.Test}
	n := d.Graph.N
	owner := make([]int8, n)
	for i, part := range []string{"train", "val", "test"} {
		a, ok := z.Arrays[part+"_mask"]
		if !ok {
			a, ok = z.Arrays[part+"_masks"]
		}
		if !ok {
			return Split{}, fmt.Errorf("%s: no %s_mask array (archive holds %s)", z.Path, part, strings.Join(z.Names(), ", "))
		}
		mask, err := a.Bools()
		if err != nil {
			return Split{}, fmt.Errorf("%s: %w", z.Path, err)
		}
		switch len(a.Shape) {
		case 1:
			if row > 0 {
				return Split{}, fmt.Errorf("%s: array %s is 1-D (one split), so row %d does not exist", z.Path, a.Name, row)
			}
		case 2:
			if row < 0 {
				return Split{}, fmt.Errorf("%s: array %s holds %d splits; pick one with :K", z.Path, a.Name, a.Shape[0])
			}
			if row >= a.Shape[0] {
				return Split{}, fmt.Errorf("%s: array %s holds %d splits, so row %d does not exist", z.Path, a.Name, a.Shape[0], row)
			}
			mask = mask[row*a.Shape[1] : (row+1)*a.Shape[1]]
		default:
			return Split{}, fmt.Errorf("%s: array %s has shape %v, want (N,) or (K, N)", z.Path, a.Name, a.Shape)
		}
		if len(mask) != n {
			return Split{}, fmt.Errorf("%s: array %s has %d entries per split for %d nodes", z.Path, a.Name, len(mask), n)
		}
		for pos, in := range mask {
			if !in {
				continue
			}
			v := int32(pos)
			if d.MaskOrder != nil {
				v = d.MaskOrder[pos]
			}
			if owner[v] != 0 {
				return Split{}, fmt.Errorf("%s: position %d is in both %s and %s masks", z.Path, pos, []string{"", "train", "val", "test"}[owner[v]], part)
			}
			owner[v] = int8(i + 1)
			if d.Labels[v] >= 0 {
				*lists[i] = append(*lists[i], v)
			}
		}
	}
	s.sort()
	return s, nil
}

func isInteger(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
