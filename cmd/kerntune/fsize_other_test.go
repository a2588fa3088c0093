//go:build !linux

package main

import "errors"

func limitFileSize(s string) error {
	if s != "" {
		return errors.New("KTDEV_FSIZE is supported on Linux only")
	}
	return nil
}
