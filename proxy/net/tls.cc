// SPDX-License-Identifier: Apache-2.0
#include "net/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace chash::proxy::net {

namespace {

// The oldest error OpenSSL queued on this thread (and the queue emptied), or `fallback`.
std::string take_ssl_error(const char* fallback) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return fallback;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Opening the file ourselves first turns "No such file" into a message a person can act on
// (OpenSSL's would be "system lib").
void check_readable(const std::string& what, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    throw std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
  }
  std::fclose(f);
}

int version_of(const std::string& name) {
  if (name == "TLSv1.2") return TLS1_2_VERSION;
  if (name == "TLSv1.3") return TLS1_3_VERSION;
  throw std::runtime_error("unknown TLS protocol '" + name.substr(0, 40) +
                           "' (TLSv1.2, TLSv1.3; older ones are not offered)");
}

bool is_ip(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// OpenSSL's socket BIO writes with write(): a peer gone away would raise SIGPIPE in the whole
// process. This one sends with MSG_NOSIGNAL (as the plaintext path does).
int bio_fd(BIO* b) { return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))); }

int bio_write(BIO* b, const char* buf, int len) {
  BIO_clear_retry_flags(b);
  const ssize_t n = ::send(bio_fd(b), buf, static_cast<std::size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int bio_read(BIO* b, char* buf, int len) {
  BIO_clear_retry_flags(b);
  const ssize_t n = ::recv(bio_fd(b), buf, static_cast<std::size_t>(len), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

long bio_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* socket_method() {
  static BIO_METHOD* const m = [] {
    BIO_METHOD* b = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "chash socket");
    BIO_meth_set_write(b, bio_write);
    BIO_meth_set_read(b, bio_read);
    BIO_meth_set_ctrl(b, bio_ctrl);
    BIO_meth_set_create(b, bio_create);
    return b;
  }();
  return m;
}

// SSL_new on `ctx` with our BIO on `fd`; null (and `error`) on failure.
SSL* new_ssl(SSL_CTX* ctx, int fd, std::string& error) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx);
  BIO* bio = ssl != nullptr ? BIO_new(socket_method()) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl);
    error = take_ssl_error("SSL_new failed");
    return nullptr;
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);
  return ssl;
}

struct CtxDeleter {
  void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};

void load_cert_and_key(SSL_CTX* ctx, const std::string& cert, const std::string& key) {
  check_readable("certificate", cert);
  check_readable("key", key);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    throw std::runtime_error("certificate '" + cert + "': " + take_ssl_error("not a PEM chain"));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error("key '" + key + "': " + take_ssl_error("not a PEM key"));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    throw std::runtime_error("key '" + key + "' does not match certificate '" + cert + "'");
  }
}

void load_ca(SSL_CTX* ctx, const std::string& ca) {
  check_readable("ca", ca);
  if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1) {
    throw std::runtime_error("ca '" + ca + "': " + take_ssl_error("no certificate in it"));
  }
}

void set_common_modes(SSL_CTX* ctx) {
  // A write retried after WANT_WRITE may come from a moved buffer (the sessions' output
  // strings grow and compact); a peer closing without close_notify is an EOF, not an error.
  SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
}

}  // namespace

std::shared_ptr<const TlsContext> TlsContext::make_server(const TlsServerOptions& o) {
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, CtxDeleter> ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) throw std::runtime_error(take_ssl_error("SSL_CTX_new failed"));
  set_common_modes(ctx.get());
  if (o.protocols.empty()) throw std::runtime_error("protocols is empty");
  int lo = TLS1_3_VERSION, hi = TLS1_2_VERSION;
  for (const auto& p : o.protocols) {
    const int v = version_of(p);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  SSL_CTX_set_min_proto_version(ctx.get(), lo);
  SSL_CTX_set_max_proto_version(ctx.get(), std::max(lo, hi));
  if (!o.ciphers.empty() && SSL_CTX_set_cipher_list(ctx.get(), o.ciphers.c_str()) != 1) {
    throw std::runtime_error("ciphers '" + o.ciphers.substr(0, 80) + "': no cipher matches");
  }
  if (o.cert.empty() || o.key.empty()) throw std::runtime_error("cert and key are required");
  load_cert_and_key(ctx.get(), o.cert, o.key);
  if (o.require_client_cert && o.ca.empty()) {
    throw std::runtime_error("require_client_cert needs a ca to check client certificates");
  }
  if (!o.ca.empty()) {
    load_ca(ctx.get(), o.ca);
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.ca.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx.get(), names);
    SSL_CTX_set_verify(
        ctx.get(), SSL_VERIFY_PEER | (o.require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
        nullptr);
  }
  // Session resumption with client certificates needs an id context.
  static const unsigned char kSid[] = "chash-proxy";
  SSL_CTX_set_session_id_context(ctx.get(), kSid, sizeof kSid - 1);
  std::shared_ptr<TlsContext> t(new TlsContext());
  t->ctx_ = ctx.release();
  t->handshake_timeout_ms_ = o.handshake_timeout_ms;
  return t;
}

std::shared_ptr<const TlsContext> TlsContext::make_client(const TlsClientOptions& o) {
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, CtxDeleter> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) throw std::runtime_error(take_ssl_error("SSL_CTX_new failed"));
  set_common_modes(ctx.get());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (!o.cert.empty() || !o.key.empty()) {
    if (o.cert.empty() || o.key.empty()) throw std::runtime_error("cert and key go together");
    load_cert_and_key(ctx.get(), o.cert, o.key);
  }
  if (!o.ca.empty()) {
    load_ca(ctx.get(), o.ca);
  } else if (o.verify && SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    throw std::runtime_error("no ca given and the system CA store cannot be read");
  }
  SSL_CTX_set_verify(ctx.get(), o.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  std::shared_ptr<TlsContext> t(new TlsContext());
  t->ctx_ = ctx.release();
  t->verify_ = o.verify;
  t->sni_ = o.sni;
  return t;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::unique_ptr<TlsStream> TlsStream::accept(const TlsContext& ctx, int fd, std::string& error) {
  SSL* ssl = new_ssl(ctx.get(), fd, error);
  if (ssl == nullptr) return nullptr;
  SSL_set_accept_state(ssl);
  return std::unique_ptr<TlsStream>(new TlsStream(ssl));
}

std::unique_ptr<TlsStream> TlsStream::connect(const TlsContext& ctx, int fd,
                                              const std::string& host, std::string& error) {
  SSL* ssl = new_ssl(ctx.get(), fd, error);
  if (ssl == nullptr) return nullptr;
  const std::string& name = ctx.sni().empty() ? host : ctx.sni();
  const bool ip = is_ip(name);
  bool ok = true;
  if (!ip && !name.empty()) {
    // SSL_set_tlsext_host_name() is a macro with a C cast.
    ok = SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                  const_cast<char*>(name.c_str())) == 1;
  }
  if (ok && ctx.verify() && !name.empty()) {
    ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1
            : SSL_set1_host(ssl, name.c_str()) == 1;
  }
  if (!ok) {
    SSL_free(ssl);
    error = "TLS: cannot use server name '" + name + "': " + take_ssl_error("rejected");
    return nullptr;
  }
  SSL_set_connect_state(ssl);
  return std::unique_ptr<TlsStream>(new TlsStream(ssl));
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

bool TlsStream::handshake_done() const noexcept { return SSL_is_init_finished(ssl_) == 1; }

int TlsStream::handshake() {
  if (handshake_done()) return 1;
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    wants_write_ = false;
    return 1;
  }
  if (fail(r) == 0) {  // close_notify during the handshake: a failure here
    error_ = "TLS: the peer closed the connection during the handshake";
    errno = ECONNRESET;
    return -1;
  }
  return errno == EAGAIN ? 0 : -1;
}

std::size_t TlsStream::pending() const noexcept {
  const int n = SSL_pending(ssl_);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

ssize_t TlsStream::fail(int r) {
  const int e = SSL_get_error(ssl_, r);
  switch (e) {
    case SSL_ERROR_WANT_READ:
      wants_write_ = false;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wants_write_ = true;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      wants_write_ = false;
      return 0;
    case SSL_ERROR_SYSCALL:
      if (errno == 0 || errno == EAGAIN) errno = ECONNRESET;
      error_ = std::string("TLS: ") + std::strerror(errno);
      ERR_clear_error();
      return -1;
    default:
      break;
  }
  const long v = SSL_get_verify_result(ssl_);
  if (v != X509_V_OK) {
    error_ = std::string("TLS certificate verify failed: ") + X509_verify_cert_error_string(v);
    ERR_clear_error();
  } else {
    error_ = "TLS: " + take_ssl_error("protocol error");
  }
  errno = EPROTO;
  return -1;
}

ssize_t TlsStream::recv(char* buf, std::size_t len) {
  ERR_clear_error();
  const int want = static_cast<int>(std::min<std::size_t>(len, 1u << 30));
  const int r = SSL_read(ssl_, buf, want);
  if (r > 0) {
    wants_write_ = false;
    return r;
  }
  return fail(r);
}

ssize_t TlsStream::send(const char* buf, std::size_t len) {
  if (len == 0) return 0;
  ERR_clear_error();
  const int want = static_cast<int>(std::min<std::size_t>(len, 1u << 30));
  const int r = SSL_write(ssl_, buf, want);
  if (r > 0) {
    wants_write_ = false;
    return r;
  }
  return fail(r);
}

ssize_t TlsStream::writev(const iovec* iov, int count) {
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len == 0) continue;
    const ssize_t n = send(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    if (n < 0) {
      if (total > 0 && errno == EAGAIN) return total;  // the caller retries this piece
      return -1;
    }
    total += n;
    if (static_cast<std::size_t>(n) < iov[i].iov_len) break;
  }
  return total;
}

void TlsStream::shutdown() noexcept {
  if (handshake_done()) {
    ERR_clear_error();
    SSL_shutdown(ssl_);
    ERR_clear_error();
  }
}

}  // namespace chash::proxy::net
