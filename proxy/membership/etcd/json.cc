// SPDX-License-Identifier: Apache-2.0
#include "membership/etcd/json.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

namespace chash::proxy::etcd {

using nlohmann::json;

namespace {

[[noreturn]] void bad(std::string_view what) {
  throw EtcdError("etcd: unexpected reply: " + std::string(what));
}

json parse(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("not JSON: " + std::string(body.substr(0, 80)));
  if (!j.is_object()) bad("not a JSON object");
  return j;
}

// proto3 JSON int64: a decimal string, or (some encoders) a number; absent: 0.
std::int64_t int64_of(const json& o, const char* name) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) bad(std::string(name) + " out of range");
    return static_cast<std::int64_t>(u);
  }
  if (!it->is_string()) bad(std::string(name) + " is not an integer");
  const std::string& s = it->get_ref<const std::string&>();
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) bad(std::string(name) + " is not an integer");
  return v;
}

bool bool_of(const json& o, const char* name) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return false;
  if (!it->is_boolean()) bad(std::string(name) + " is not a boolean");
  return it->get<bool>();
}

std::string string_of(const json& o, const char* name) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return {};
  if (!it->is_string()) bad(std::string(name) + " is not a string");
  return it->get<std::string>();
}

// A field that must be an object when present (absent: an empty object).
const json& object_of(const json& o, const char* name) {
  static const json empty = json::object();
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return empty;
  if (!it->is_object()) bad(std::string(name) + " is not an object");
  return *it;
}

const json& array_of(const json& o, const char* name) {
  static const json empty = json::array();
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return empty;
  if (!it->is_array()) bad(std::string(name) + " is not an array");
  return *it;
}

std::int64_t header_revision(const json& o) { return int64_of(object_of(o, "header"), "revision"); }

KeyValue kv_of(const json& o) {
  if (!o.is_object()) bad("a key-value is not an object");
  KeyValue kv;
  kv.key = base64_decode(string_of(o, "key"));
  kv.value = base64_decode(string_of(o, "value"));
  kv.create_revision = int64_of(o, "create_revision");
  kv.mod_revision = int64_of(o, "mod_revision");
  kv.version = int64_of(o, "version");
  kv.lease = int64_of(o, "lease");
  return kv;
}

RangeReply range_of(const json& o) {
  RangeReply r;
  r.revision = header_revision(o);
  for (const json& kv : array_of(o, "kvs")) r.kvs.push_back(kv_of(kv));
  r.more = bool_of(o, "more");
  return r;
}

json op_json(const Op& op) {
  switch (op.kind) {
    case Op::Kind::kPut: {
      json p = {{"key", base64_encode(op.key)}, {"value", base64_encode(op.value)}};
      if (op.lease != 0) p["lease"] = std::to_string(op.lease);
      return {{"request_put", p}};
    }
    case Op::Kind::kDelete: {
      json d = {{"key", base64_encode(op.key)}};
      if (!op.range_end.empty()) d["range_end"] = base64_encode(op.range_end);
      return {{"request_delete_range", d}};
    }
    case Op::Kind::kRange:
      return {{"request_range", {{"key", base64_encode(op.key)}}}};
  }
  return {};
}

const char* target_name(Compare::Target t) {
  switch (t) {
    case Compare::Target::kMod:
      return "MOD";
    case Compare::Target::kCreate:
      return "CREATE";
    case Compare::Target::kVersion:
      return "VERSION";
    case Compare::Target::kValue:
      return "VALUE";
  }
  return "MOD";
}

const char* result_name(Compare::Result r) {
  switch (r) {
    case Compare::Result::kEqual:
      return "EQUAL";
    case Compare::Result::kNotEqual:
      return "NOT_EQUAL";
    case Compare::Result::kLess:
      return "LESS";
    case Compare::Result::kGreater:
      return "GREATER";
  }
  return "EQUAL";
}

}  // namespace

// ---- base64 (OpenSSL's EVP block coder: RFC 4648 with padding, as Go's StdEncoding) -----------

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.empty()) return {};
  if (text.size() % 4 != 0)
    throw EtcdError("etcd: bad base64 (length " + std::to_string(text.size()) + ")");
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '/' || (c == '=' && i + 2 >= text.size());
    if (!ok) throw EtcdError("etcd: bad base64 character");
  }
  // "=" only at the end: "x=" followed by a non-'=' is not base64.
  if (text[text.size() - 2] == '=' && text.back() != '=')
    throw EtcdError("etcd: bad base64 padding");
  std::string out(3 * text.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) throw EtcdError("etcd: bad base64");
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t len = static_cast<std::size_t>(n);
  if (text.back() == '=') --len;
  if (text[text.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(end.back());
    if (c < 0xff) {
      ++c;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

// ---- Requests ---------------------------------------------------------------------------------

std::string range_request(std::string_view key, std::string_view range_end, std::int64_t revision) {
  json j = {{"key", base64_encode(key)}};
  if (!range_end.empty()) j["range_end"] = base64_encode(range_end);
  if (revision != 0) j["revision"] = std::to_string(revision);
  return j.dump();
}

std::string put_request(std::string_view key, std::string_view value, std::int64_t lease) {
  json j = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) j["lease"] = std::to_string(lease);
  return j.dump();
}

std::string delete_request(std::string_view key, std::string_view range_end) {
  json j = {{"key", base64_encode(key)}};
  if (!range_end.empty()) j["range_end"] = base64_encode(range_end);
  return j.dump();
}

std::string txn_request(const std::vector<Compare>& compare, const std::vector<Op>& success,
                        const std::vector<Op>& failure) {
  json c = json::array(), s = json::array(), f = json::array();
  for (const Compare& x : compare) {
    json o = {{"key", base64_encode(x.key)},
              {"target", target_name(x.target)},
              {"result", result_name(x.result)}};
    switch (x.target) {
      case Compare::Target::kMod:
        o["mod_revision"] = std::to_string(x.number);
        break;
      case Compare::Target::kCreate:
        o["create_revision"] = std::to_string(x.number);
        break;
      case Compare::Target::kVersion:
        o["version"] = std::to_string(x.number);
        break;
      case Compare::Target::kValue:
        o["value"] = base64_encode(x.value);
        break;
    }
    c.push_back(std::move(o));
  }
  for (const Op& op : success) s.push_back(op_json(op));
  for (const Op& op : failure) f.push_back(op_json(op));
  return json{{"compare", c}, {"success", s}, {"failure", f}}.dump();
}

std::string watch_request(std::string_view key, std::string_view range_end,
                          std::int64_t start_revision) {
  json c = {{"key", base64_encode(key)}, {"progress_notify", true}};
  if (!range_end.empty()) c["range_end"] = base64_encode(range_end);
  if (start_revision != 0) c["start_revision"] = std::to_string(start_revision);
  return json{{"create_request", c}}.dump();
}

std::string lease_grant_request(std::int64_t ttl_seconds) {
  return json{{"TTL", std::to_string(ttl_seconds)}}.dump();
}

std::string lease_id_request(std::int64_t id) { return json{{"ID", std::to_string(id)}}.dump(); }

std::string authenticate_request(std::string_view user, std::string_view password) {
  return json{{"name", std::string(user)}, {"password", std::string(password)}}.dump();
}

// ---- Replies ----------------------------------------------------------------------------------

std::optional<ErrorReply> parse_error(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const json* e = &j;
  // A watch stream's error comes as {"error":{"grpc_code":..,"message":..}}.
  if (const auto it = j.find("error"); it != j.end() && it->is_object()) e = &*it;
  const auto m = e->find("message");
  if (m == e->end() || !m->is_string()) {
    const auto s = e->find("error");
    if (s == e->end() || !s->is_string()) return std::nullopt;
  }
  ErrorReply r;
  r.message =
      m != e->end() && m->is_string() ? m->get<std::string>() : e->at("error").get<std::string>();
  for (const char* name : {"code", "grpc_code"}) {
    const auto c = e->find(name);
    if (c != e->end() && c->is_number_integer()) {
      const auto v = c->get<std::int64_t>();
      if (v >= 0 && v < 1000) r.code = static_cast<int>(v);
    }
  }
  return r;
}

RangeReply parse_range(std::string_view body) { return range_of(parse(body)); }

std::int64_t parse_put(std::string_view body) { return header_revision(parse(body)); }

TxnReply parse_txn(std::string_view body) {
  const json j = parse(body);
  TxnReply r;
  r.succeeded = bool_of(j, "succeeded");
  r.revision = header_revision(j);
  for (const json& resp : array_of(j, "responses")) {
    if (!resp.is_object()) bad("a transaction response is not an object");
    const auto it = resp.find("response_range");
    if (it != resp.end()) {
      if (!it->is_object()) bad("response_range is not an object");
      r.ranges.push_back(range_of(*it));
    }
  }
  return r;
}

std::int64_t parse_lease_grant(std::string_view body, std::int64_t* ttl) {
  const json j = parse(body);
  if (const std::string e = string_of(j, "error"); !e.empty())
    throw EtcdError("etcd: lease grant: " + e);
  const std::int64_t id = int64_of(j, "ID");
  if (id == 0) bad("lease grant without an ID");
  if (ttl != nullptr) *ttl = int64_of(j, "TTL");
  return id;
}

std::int64_t parse_lease_keepalive(std::string_view body) {
  const json j = parse(body);
  const json& r = object_of(j, "result");
  return int64_of(r, "TTL");
}

std::string parse_authenticate(std::string_view body) {
  const json j = parse(body);
  std::string token = string_of(j, "token");
  if (token.empty()) bad("authenticate without a token");
  return token;
}

WatchReply parse_watch(std::string_view line) {
  const json j = parse(line);
  if (const auto it = j.find("error"); it != j.end()) {
    const auto e = parse_error(line);
    throw EtcdError("etcd: watch: " + (e ? e->message : std::string("error")));
  }
  const json& r = object_of(j, "result");
  WatchReply w;
  w.revision = header_revision(r);
  w.created = bool_of(r, "created");
  w.canceled = bool_of(r, "canceled");
  w.compact_revision = int64_of(r, "compact_revision");
  w.cancel_reason = string_of(r, "cancel_reason");
  for (const json& e : array_of(r, "events")) {
    if (!e.is_object()) bad("a watch event is not an object");
    WatchEvent ev;
    const std::string type = string_of(e, "type");
    if (type == "DELETE") ev.deleted = true;
    else if (!type.empty() && type != "PUT") bad("unknown watch event type");
    ev.kv = kv_of(object_of(e, "kv"));
    w.events.push_back(std::move(ev));
  }
  return w;
}

std::vector<std::string> WatchStream::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  buf_.append(bytes);
  std::size_t start = 0;
  for (;;) {
    // Only the bytes not looked at before: a long line arriving in small reads stays linear.
    const std::size_t nl = buf_.find('\n', std::max(start, scanned_));
    if (nl == std::string::npos) break;
    std::string_view line(buf_.data() + start, nl - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) lines.emplace_back(line);
    start = nl + 1;
  }
  buf_.erase(0, start);
  scanned_ = buf_.size();
  if (buf_.size() > max_line_) {
    buf_.clear();
    scanned_ = 0;
    throw EtcdError("etcd: a watch message longer than " + std::to_string(max_line_) + " bytes");
  }
  return lines;
}

}  // namespace chash::proxy::etcd
