package main

// File transfers over HTTP on keeld's port (a connection whose first byte is not '{'): Keel passes
// request and response bodies straight through, so a transfer costs no per-chunk work in Keel.
//
//	GET /files?path=P&offset=N&length=M  the bytes [N, N+M) of the file P (M = -1: to its end)
//	PUT /files?path=P  (X-Keel-Max-Bytes: K)  P made from the body (its directories too); past K bytes
//	                   413 (the rest of the body read and dropped) and P is removed
//
// Both take `Authorization: Bearer <token>`. A failure answers the system's message ("Permission
// denied", "Is a directory", ...), which Keel maps as it maps the shell helpers' messages.

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func filesServer(want []byte) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/files", func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		path := r.URL.Query().Get("path")
		if !filepath.IsAbs(path) {
			http.Error(w, "path must be absolute", http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodGet:
			download(w, r, path)
		case http.MethodPut:
			upload(w, r, path)
		default:
			http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
		}
	})
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// failure answers an error as the system's message with a status close to its meaning.
func failure(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			status = http.StatusNotFound
		case syscall.EACCES, syscall.EPERM, syscall.EROFS:
			status = http.StatusForbidden
		case syscall.EISDIR, syscall.ENOTDIR, syscall.EEXIST:
			status = http.StatusConflict
		}
		msg := errno.Error()
		http.Error(w, strings.ToUpper(msg[:1])+msg[1:], status)
		return
	}
	http.Error(w, err.Error(), status)
}

func download(w http.ResponseWriter, r *http.Request, path string) {
	q := r.URL.Query()
	offset, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
	length, err := strconv.ParseInt(q.Get("length"), 10, 64)
	if err != nil {
		length = -1
	}
	f, err := os.Open(path)
	if err != nil {
		failure(w, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		failure(w, err)
		return
	}
	if st.IsDir() {
		failure(w, syscall.EISDIR)
		return
	}
	if offset < 0 || offset > st.Size() {
		offset = st.Size()
	}
	if length < 0 || offset+length > st.Size() {
		length = st.Size() - offset
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		failure(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	// A file and a length: the kernel copies it (sendfile).
	io.CopyN(w, f, length)
}

func upload(w http.ResponseWriter, r *http.Request, path string) {
	max, err := strconv.ParseInt(r.Header.Get("X-Keel-Max-Bytes"), 10, 64)
	if err != nil || max < 0 {
		max = 1<<63 - 2
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		failure(w, err)
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		failure(w, err)
		return
	}
	n, err := io.Copy(f, io.LimitReader(r.Body, max+1))
	closeErr := f.Close()
	if n > max {
		os.Remove(path)
		// Read to its end, so the sender sees this answer rather than a connection cut mid-body.
		io.Copy(io.Discard, r.Body)
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(path)
		failure(w, err)
		return
	}
	io.WriteString(w, strconv.FormatInt(n, 10))
}
