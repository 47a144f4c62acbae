// Command kafkagoproducer produces a file of records to one topic at a steady rate with
// segmentio/kafka-go's Writer, as an application does: record i is handed to the writer at
// start + i/rate.
//
// Usage: kafkagoproducer BOOTSTRAP TOPIC RECORDS_FILE RATE PRODUCERS [Name=value ...]
//
// RECORDS_FILE holds, per record, int32 key length (-1 for null), key, int32 value length, value.
// Each of PRODUCERS producers is its own Writer taking every PRODUCERS-th record, written with
// Async set so that WriteMessages hands the record over and returns, as a stream does.  The
// names are WriterConfig's fields: BatchSize, BatchTimeout (a Go duration), QueueCapacity, and
// CompressionCodec (none, gzip, snappy, lz4).
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

type record struct{ key, value []byte }

type failures struct{ report func(string) }

func (f failures) Write(p []byte) (int, error) {
	f.report(strings.TrimSpace(string(p)))
	return len(p), nil
}

func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []record
	field := func() ([]byte, error) {
		var n int32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	for {
		k, err := field()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		v, err := field()
		if err != nil {
			return nil, err
		}
		out = append(out, record{k, v})
	}
}

func configure(c *kafka.WriterConfig, name, value string) error {
	var err error
	switch name {
	case "BatchSize":
		c.BatchSize, err = strconv.Atoi(value)
	case "QueueCapacity":
		c.QueueCapacity, err = strconv.Atoi(value)
	case "BatchTimeout":
		c.BatchTimeout, err = time.ParseDuration(value)
	case "CompressionCodec":
		switch value {
		case "none":
			c.CompressionCodec = nil
		case "gzip":
			c.CompressionCodec = gzip.NewCompressionCodec()
		case "snappy":
			c.CompressionCodec = snappy.NewCompressionCodec()
		case "lz4":
			c.CompressionCodec = lz4.NewCompressionCodec()
		default:
			return fmt.Errorf("unknown codec %q", value)
		}
	default:
		return fmt.Errorf("unknown setting %q", name)
	}
	return err
}

func main() {
	if len(os.Args) < 6 {
		fmt.Fprintln(os.Stderr, "usage: kafkagoproducer BOOTSTRAP TOPIC RECORDS_FILE RATE PRODUCERS [Name=value ...]")
		os.Exit(2)
	}
	bootstrap, topic := os.Args[1], os.Args[2]
	records, err := readRecords(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rate, _ := strconv.ParseFloat(os.Args[4], 64)
	producers, _ := strconv.Atoi(os.Args[5])
	var failure error
	var once sync.Once
	// an Async writer reports a failed write only to its error logger
	logger := log.New(failures{func(line string) { once.Do(func() { failure = fmt.Errorf("%s", line) }) }}, "", 0)
	config := kafka.WriterConfig{Brokers: []string{bootstrap}, Topic: topic, Async: true, ErrorLogger: logger}
	for _, arg := range os.Args[6:] {
		kv := strings.SplitN(arg, "=", 2)
		if len(kv) != 2 {
			fmt.Fprintf(os.Stderr, "not Name=value: %q\n", arg)
			os.Exit(2)
		}
		if err := configure(&config, kv[0], kv[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	writers := make([]*kafka.Writer, producers)
	for p := range writers {
		writers[p] = kafka.NewWriter(config)
	}
	start := time.Now().Add(500 * time.Millisecond)
	var sent sync.WaitGroup
	for p, w := range writers {
		sent.Add(1)
		go func(first int, w *kafka.Writer) {
			defer sent.Done()
			for i := first; i < len(records); i += producers {
				due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				}
				m := kafka.Message{Key: records[i].key, Value: records[i].value}
				if err := w.WriteMessages(context.Background(), m); err != nil {
					once.Do(func() { failure = err })
				}
			}
		}(p, w)
	}
	sent.Wait()
	for _, w := range writers {
		if err := w.Close(); err != nil {
			once.Do(func() { failure = err })
		}
	}
	if failure != nil {
		fmt.Fprintln(os.Stderr, failure)
		os.Exit(1)
	}
}
