// Command saramaproducer produces a file of records to one topic at a steady rate with sarama's
// AsyncProducer, as an application does: record i is handed to the producer at start + i/rate and
// the producer stamps it.
//
// Usage: saramaproducer BOOTSTRAP TOPIC RECORDS_FILE RATE PRODUCERS [Name=value ...]
//
// RECORDS_FILE holds, per record, int32 key length (-1 for null), key, int32 value length, value.
// Each of PRODUCERS producers is its own AsyncProducer taking every PRODUCERS-th record.  The
// names are sarama's Config fields: Producer.Flush.Frequency (a Go duration, or a Go expression of
// one such as "5 * time.Millisecond"), Producer.Flush.Bytes, Producer.Flush.Messages,
// Producer.Flush.MaxMessages, Producer.Compression (none, gzip, snappy, lz4, zstd, or Go's
// sarama.CompressionZSTD and the like), Producer.CompressionLevel, Producer.Idempotent, Version
// (a Kafka version).
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type record struct{ key, value []byte }

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

var codecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	// as Go source names them, which is how kcodec advise prints a setting
	"sarama.CompressionNone": sarama.CompressionNone, "sarama.CompressionGZIP": sarama.CompressionGZIP,
	"sarama.CompressionSnappy": sarama.CompressionSnappy, "sarama.CompressionLZ4": sarama.CompressionLZ4,
	"sarama.CompressionZSTD": sarama.CompressionZSTD,
}

// duration reads a Go duration ("5ms") or a Go expression of one ("5 * time.Millisecond", "0").
func duration(value string) (time.Duration, error) {
	if n, err := strconv.Atoi(value); err == nil {
		return time.Duration(n), nil
	}
	if strings.HasSuffix(value, " * time.Millisecond") {
		n, err := strconv.Atoi(strings.TrimSuffix(value, " * time.Millisecond"))
		return time.Duration(n) * time.Millisecond, err
	}
	return time.ParseDuration(value)
}

func configure(c *sarama.Config, name, value string) error {
	atoi := func() (int, error) { return strconv.Atoi(value) }
	var err error
	switch name {
	case "Producer.Flush.Frequency":
		c.Producer.Flush.Frequency, err = duration(value)
	case "Producer.Flush.Bytes":
		c.Producer.Flush.Bytes, err = atoi()
	case "Producer.Flush.Messages":
		c.Producer.Flush.Messages, err = atoi()
	case "Producer.Flush.MaxMessages":
		c.Producer.Flush.MaxMessages, err = atoi()
	case "Producer.CompressionLevel":
		c.Producer.CompressionLevel, err = atoi()
	case "Producer.Compression":
		codec, ok := codecs[value]
		if !ok {
			return fmt.Errorf("unknown codec %q", value)
		}
		c.Producer.Compression = codec
	case "Producer.Idempotent":
		c.Producer.Idempotent, err = strconv.ParseBool(value)
		if c.Producer.Idempotent {
			// what sarama requires of an idempotent producer (Config.Validate)
			c.Producer.RequiredAcks = sarama.WaitForAll
			c.Net.MaxOpenRequests = 1
		}
	case "Version":
		c.Version, err = sarama.ParseKafkaVersion(value)
	default:
		return fmt.Errorf("unknown setting %q", name)
	}
	return err
}

func main() {
	if len(os.Args) < 6 {
		fmt.Fprintln(os.Stderr, "usage: saramaproducer BOOTSTRAP TOPIC RECORDS_FILE RATE PRODUCERS [Name=value ...]")
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
	config := sarama.NewConfig()
	// v2 record batches need 0.11; zstd needs 2.1
	config.Version = sarama.V2_1_0_0
	for _, arg := range os.Args[6:] {
		kv := strings.SplitN(arg, "=", 2)
		if len(kv) != 2 {
			fmt.Fprintf(os.Stderr, "not Name=value: %q\n", arg)
			os.Exit(2)
		}
		if err := configure(config, kv[0], kv[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	clients := make([]sarama.AsyncProducer, producers)
	for p := range clients {
		clients[p], err = sarama.NewAsyncProducer([]string{bootstrap}, config)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	var failed sync.Once
	exit := 0
	var drained sync.WaitGroup
	for _, c := range clients {
		drained.Add(1)
		go func(c sarama.AsyncProducer) {
			defer drained.Done()
			for e := range c.Errors() {
				failed.Do(func() { fmt.Fprintln(os.Stderr, e.Err); exit = 1 })
			}
		}(c)
	}
	start := time.Now().Add(500 * time.Millisecond)
	var sent sync.WaitGroup
	for p, c := range clients {
		sent.Add(1)
		go func(first int, c sarama.AsyncProducer) {
			defer sent.Done()
			for i := first; i < len(records); i += producers {
				due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				}
				m := &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(records[i].value)}
				if records[i].key != nil {
					m.Key = sarama.ByteEncoder(records[i].key)
				}
				c.Input() <- m
			}
		}(p, c)
	}
	sent.Wait()
	for _, c := range clients {
		c.AsyncClose()
	}
	drained.Wait()
	os.Exit(exit)
}
