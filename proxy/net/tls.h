// SPDX-License-Identifier: Apache-2.0
// chash-proxy — TLS on a non-blocking socket (OpenSSL), for client and backend connections.
//
// A TlsContext is an immutable SSL_CTX built from a pool's `tls:` (accepting clients) or
// `server_tls:` (connecting to backends) keys when the config is loaded; a reload builds new
// ones (certificates are read again) and only new connections use them: each SSL holds a
// reference to the SSL_CTX it was made from, so existing connections keep theirs.
//
// A TlsStream wraps one connection's SSL and offers what the sessions call on a plain socket —
// recv(), send(), writev() — with the same contract: bytes, 0 at EOF, or -1 with errno
// (EAGAIN: try again when epoll says so; EPROTO: a TLS failure, error() says which). The
// handshake runs inside the first reads and writes, so it never blocks a worker. A call that
// is blocked because TLS needs the socket writable (a handshake or key update while reading)
// sets wants_write(): the session then waits for EPOLLOUT and calls it again.
//
// The plaintext path does not go through here: a session holds a null TlsStream pointer and
// branches on it.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using SSL_CTX = struct ssl_ctx_st;
using SSL = struct ssl_st;

namespace chash::proxy::net {

// `tls:` of a pool: the proxy's side of client connections.
struct TlsServerOptions {
  std::string cert;  // PEM certificate (chain) file
  std::string key;   // PEM private key file
  std::string ca;    // CA file clients' certificates must chain to (empty: none asked)
  bool require_client_cert = false;
  std::vector<std::string> protocols = {"TLSv1.2", "TLSv1.3"};
  std::string ciphers;  // TLS ≤ 1.2 cipher list (OpenSSL syntax); empty: OpenSSL's default
  std::uint32_t handshake_timeout_ms = 10000;
};

// `server_tls:` of a pool or a server: the proxy's side of backend connections.
struct TlsClientOptions {
  std::string ca;         // CA file backends' certificates must chain to (empty: system CAs)
  bool verify = true;     // check the chain and that the certificate names the backend
  std::string sni;        // server name sent and checked (empty: the backend's host)
  std::string cert, key;  // client certificate for backends that ask for one
};

class TlsContext {
 public:
  // Throw std::runtime_error naming the file or option at fault.
  static std::shared_ptr<const TlsContext> make_server(const TlsServerOptions& o);
  static std::shared_ptr<const TlsContext> make_client(const TlsClientOptions& o);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const noexcept { return ctx_; }
  bool verify() const noexcept { return verify_; }
  const std::string& sni() const noexcept { return sni_; }
  std::uint32_t handshake_timeout_ms() const noexcept { return handshake_timeout_ms_; }

 private:
  TlsContext() = default;
  SSL_CTX* ctx_ = nullptr;
  bool verify_ = true;
  std::string sni_;
  std::uint32_t handshake_timeout_ms_ = 10000;
};

class TlsStream {
 public:
  // The server side of an accepted socket; null (with `error`) when OpenSSL cannot make one.
  static std::unique_ptr<TlsStream> accept(const TlsContext& ctx, int fd, std::string& error);
  // The client side towards backend `host` (an IP address or a name): sends SNI for a name and
  // checks the certificate against the context's sni, else `host`, when the context verifies.
  static std::unique_ptr<TlsStream> connect(const TlsContext& ctx, int fd, const std::string& host,
                                            std::string& error);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  ssize_t recv(char* buf, std::size_t len);
  ssize_t send(const char* buf, std::size_t len);
  // Writes the pieces in order, each with one SSL_write; stops at the first that blocks.
  ssize_t writev(const iovec* iov, int count);

  // Runs the handshake (a relay that must finish it before anything else flows): 1 done, 0
  // blocked (wants_write() says on which direction), -1 failed (error() says why).
  int handshake();
  // Decrypted bytes OpenSSL holds that a recv() would return without reading the socket (epoll
  // cannot report them: a reader that stops early must look here).
  std::size_t pending() const noexcept;

  bool wants_write() const noexcept { return wants_write_; }
  bool handshake_done() const noexcept;
  // Why the last call failed ("TLS certificate verify failed: certificate has expired", ...).
  const std::string& error() const noexcept { return error_; }
  // Sends close_notify without waiting for the peer's (best effort, before close()).
  void shutdown() noexcept;

 private:
  explicit TlsStream(SSL* ssl) noexcept : ssl_(ssl) {}
  // Maps SSL_get_error() for result r to the socket contract (sets errno, wants_write_).
  ssize_t fail(int r);

  SSL* ssl_;
  bool wants_write_ = false;
  std::string error_;
};

}  // namespace chash::proxy::net
