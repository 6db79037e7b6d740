// SPDX-License-Identifier: Apache-2.0
// chash.node: the N-API addon behind lib/index.js. NativeRouter owns one chash_router* of the C
// ABI (chash/chash_c.h) and each method is one call into it; nothing is hashed here. Every
// failure is a JavaScript exception (an Error whose .code is the CHASH_ERR_* name, or a
// TypeError for a wrong argument), never a crash: N-API with C++ exceptions disabled, so each
// error path throws and returns.
#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chash/chash_c.h"
#include "chash_packed.h"

namespace {

// Throws an Error with libchash's message, .code = "CHASH_ERR_..." and .errno = the number, and
// frees err.
void ThrowChash(Napi::Env env, int code, chash_error* err) {
  Napi::Error e = Napi::Error::New(env, err ? chash_error_message(err) : "chash: out of memory");
  e.Set("code", Napi::String::New(env, chash_status_name(code)));
  e.Set("errno", Napi::Number::New(env, code));
  chash_error_free(err);
  e.ThrowAsJavaScriptException();
}

void ThrowType(Napi::Env env, const char* msg) {
  Napi::TypeError::New(env, msg).ThrowAsJavaScriptException();
}

// A key's bytes: a Buffer's in place, a string's UTF-8 in a small inline buffer (most keys) or
// a heap string. ok() is false (and a TypeError pending) for anything else.
class KeyBytes {
 public:
  KeyBytes(Napi::Env env, napi_value v) {
    napi_valuetype type;
    napi_typeof(env, v, &type);
    if (type == napi_string) {
      size_t len = 0;
      napi_get_value_string_utf8(env, v, inline_, sizeof inline_, &len);
      // N-API copies at most size - 1 bytes and never splits a character, so a cut string
      // leaves up to 3 bytes unused: only a length below size - 4 proves the key whole.
      if (len + 4 < sizeof inline_) {
        data_ = inline_;
        len_ = len;
        return;
      }
      // Possibly cut: ask for the length, then read the whole key.
      napi_get_value_string_utf8(env, v, nullptr, 0, &len);
      heap_.resize(len + 1);
      napi_get_value_string_utf8(env, v, heap_.data(), heap_.size(), &len);
      data_ = heap_.data();
      len_ = len;
      return;
    }
    bool is_buffer = false;
    napi_is_buffer(env, v, &is_buffer);
    if (is_buffer) {
      void* p = nullptr;
      napi_get_buffer_info(env, v, &p, &len_);
      data_ = static_cast<const char*>(p);
      return;
    }
    ThrowType(env, "chash: a key must be a string or a Buffer");
  }
  bool ok() const { return data_ != nullptr; }
  const char* data() const { return data_; }
  size_t size() const { return len_; }

 private:
  char inline_[256];
  std::string heap_;
  const char* data_ = nullptr;
  size_t len_ = 0;
};

class NativeRouter : public Napi::ObjectWrap<NativeRouter> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "NativeRouter",
                       {InstanceMethod("route", &NativeRouter::Route),
                        InstanceMethod("routeBatch", &NativeRouter::RouteBatch),
                        InstanceMethod("routeN", &NativeRouter::RouteN),
                        InstanceMethod("addNode", &NativeRouter::AddNode),
                        InstanceMethod("removeNode", &NativeRouter::RemoveNode),
                        InstanceMethod("setWeight", &NativeRouter::SetWeight),
                        InstanceMethod("nodeNames", &NativeRouter::NodeNames),
                        InstanceMethod("weight", &NativeRouter::Weight),
                        InstanceMethod("describe", &NativeRouter::Describe),
                        InstanceMethod("close", &NativeRouter::Close)});
  }

  // new NativeRouter(spec, names, weights), or new NativeRouter(External) from a change.
  explicit NativeRouter(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeRouter>(info) {
    Napi::Env env = info.Env();
    if (info.Length() == 1 && info[0].IsExternal()) {
      router_ = info[0].As<Napi::External<chash_router>>().Data();
      return;
    }
    if (info.Length() != 3 || !info[0].IsObject() || !info[1].IsArray() || !info[2].IsArray()) {
      ThrowType(env, "chash: NativeRouter(spec, names, weights)");
      return;
    }
    Napi::Object js = info[0].As<Napi::Object>();
    // The spec's strings live in `text` until chash_router_new has copied what it needs.
    std::vector<std::string> text;
    text.reserve(5 + 64);
    auto field = [&](const char* name) -> const char* {
      Napi::Value v = js.Get(name);
      if (!v.IsString()) return nullptr;
      text.push_back(v.As<Napi::String>().Utf8Value());
      return text.back().c_str();
    };
    chash_spec spec{};
    spec.preset = field("preset");
    spec.algorithm = field("algorithm");
    spec.ring = field("ring");
    spec.hash = field("hash");
    spec.hash_tag = field("hashTag");
    std::vector<std::string> opt_text;
    std::vector<chash_option> options;
    Napi::Value opts = js.Get("options");
    if (opts.IsArray()) {
      Napi::Array a = opts.As<Napi::Array>();
      opt_text.reserve(2 * a.Length());
      for (uint32_t i = 0; i < a.Length(); ++i) {
        Napi::Value pair = a.Get(i);
        if (!pair.IsArray() || pair.As<Napi::Array>().Length() != 2) {
          ThrowType(env, "chash: options must be [name, value] pairs");
          return;
        }
        opt_text.push_back(pair.As<Napi::Array>().Get(0u).ToString().Utf8Value());
        opt_text.push_back(pair.As<Napi::Array>().Get(1u).ToString().Utf8Value());
      }
      for (size_t i = 0; i < opt_text.size(); i += 2) {
        options.push_back(chash_option{opt_text[i].c_str(), opt_text[i + 1].c_str()});
      }
      spec.options = options.data();
      spec.num_options = options.size();
    }
    Napi::Array names = info[1].As<Napi::Array>();
    Napi::Array weights = info[2].As<Napi::Array>();
    const uint32_t n = names.Length();
    if (weights.Length() != n) {
      ThrowType(env, "chash: one weight per node");
      return;
    }
    std::vector<std::string> name_text(n);
    std::vector<const char*> name_ptrs(n);
    std::vector<size_t> name_lens(n);
    std::vector<uint32_t> node_weights(n);
    for (uint32_t i = 0; i < n; ++i) {
      Napi::Value name = names.Get(i);
      Napi::Value w = weights.Get(i);
      if (!name.IsString()) {
        ThrowType(env, "chash: a node name must be a string");
        return;
      }
      if (!w.IsNumber() || w.As<Napi::Number>().DoubleValue() < 0 ||
          w.As<Napi::Number>().DoubleValue() > 4294967295.0 ||
          w.As<Napi::Number>().DoubleValue() != static_cast<double>(w.As<Napi::Number>().Uint32Value())) {
        ThrowType(env, "chash: a weight must be an integer >= 0");
        return;
      }
      name_text[i] = name.As<Napi::String>().Utf8Value();
      name_ptrs[i] = name_text[i].data();
      name_lens[i] = name_text[i].size();
      node_weights[i] = w.As<Napi::Number>().Uint32Value();
    }
    chash_nodes nodes{name_ptrs.data(), name_lens.data(), node_weights.data(), n};
    chash_error* err = nullptr;
    int rc = chash_router_new(&spec, &nodes, &router_, &err);
    if (rc != CHASH_OK) ThrowChash(env, rc, err);
  }

  ~NativeRouter() override { chash_router_free(router_); }

 private:
  // The router, or nullptr with an Error pending when it was closed.
  const chash_router* Live(Napi::Env env) {
    if (router_ == nullptr) Napi::Error::New(env, "chash: this router is closed").ThrowAsJavaScriptException();
    return router_;
  }

  Napi::Value Route(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    KeyBytes key(env, info[0]);
    if (!key.ok()) return env.Undefined();
    uint32_t id = chash_route(r, key.data(), key.size());
    return Napi::Number::New(env, id == CHASH_NO_NODE ? -1.0 : static_cast<double>(id));
  }

  // routeBatch(keys: Array<string|Buffer>) -> Int32Array: every key's UTF-8 packed into one
  // buffer here (no JavaScript per key), then one chash_route_packed call.
  Napi::Value RouteBatch(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    if (!info[0].IsArray()) {
      ThrowType(env, "chash: routeAll takes an array of keys");
      return env.Undefined();
    }
    napi_value arr = info[0];
    uint32_t n = 0;
    napi_get_array_length(env, arr, &n);
    std::vector<char>& packed = packed_;
    std::vector<int32_t>& offsets = offsets_;
    packed.clear();
    offsets.assign(static_cast<size_t>(n) + 1, 0);
    for (uint32_t i = 0; i < n; ++i) {
      napi_value v;
      napi_get_element(env, arr, i, &v);
      KeyBytes key(env, v);
      if (!key.ok()) return env.Undefined();
      packed.insert(packed.end(), key.data(), key.data() + key.size());
      if (packed.size() > INT32_MAX) {
        Napi::RangeError::New(env, "chash: a batch of more than 2 GiB of keys").ThrowAsJavaScriptException();
        return env.Undefined();
      }
      offsets[i + 1] = static_cast<int32_t>(packed.size());
    }
    Napi::Int32Array out = Napi::Int32Array::New(env, n);
    // CHASH_NO_NODE (0xFFFFFFFF) read as an int32 is -1; the offsets are ours, so it cannot fail.
    chash_route_packed(r, packed.data(), packed.size(), offsets.data(), n,
                       reinterpret_cast<uint32_t*>(out.Data()));
    return out;
  }

  Napi::Value RouteN(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    KeyBytes key(env, info[0]);
    if (!key.ok()) return env.Undefined();
    if (!info[1].IsNumber() || info[1].As<Napi::Number>().DoubleValue() < 0) {
      ThrowType(env, "chash: replicas(key, n) needs n >= 0");
      return env.Undefined();
    }
    size_t max = info[1].As<Napi::Number>().Uint32Value();
    size_t nodes = chash_router_node_count(r);
    if (max > nodes) max = nodes;
    std::vector<uint32_t> ids(max + 1);
    size_t count = 0;
    chash_error* err = nullptr;
    int rc = chash_route_n(r, key.data(), key.size(), ids.data(), max, &count, &err);
    if (rc != CHASH_OK) {
      ThrowChash(env, rc, err);
      return env.Undefined();
    }
    Napi::Int32Array out = Napi::Int32Array::New(env, count);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(ids[i]);
    return out;
  }

  enum class Change { kAdd, kRemove, kSetWeight };

  Napi::Value Changed(const Napi::CallbackInfo& info, Change what) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    if (!info[0].IsString()) {
      ThrowType(env, "chash: a node name must be a string");
      return env.Undefined();
    }
    uint32_t weight = 0;
    if (what != Change::kRemove) {
      if (!info[1].IsNumber() || info[1].As<Napi::Number>().DoubleValue() < 0) {
        ThrowType(env, "chash: a weight must be an integer >= 0");
        return env.Undefined();
      }
      weight = info[1].As<Napi::Number>().Uint32Value();
    }
    std::string name = info[0].As<Napi::String>().Utf8Value();
    chash_router* out = nullptr;
    chash_error* err = nullptr;
    int rc = what == Change::kAdd
                 ? chash_router_add_node(r, name.data(), name.size(), weight, &out, &err)
             : what == Change::kRemove
                 ? chash_router_remove_node(r, name.data(), name.size(), &out, &err)
                 : chash_router_set_weight(r, name.data(), name.size(), weight, &out, &err);
    if (rc != CHASH_OK) {
      ThrowChash(env, rc, err);
      return env.Undefined();
    }
    // The constructor of this env (each worker thread has its own, see Init).
    return env.GetInstanceData<Napi::FunctionReference>()->New(
        {Napi::External<chash_router>::New(env, out)});
  }

  Napi::Value AddNode(const Napi::CallbackInfo& info) { return Changed(info, Change::kAdd); }
  Napi::Value RemoveNode(const Napi::CallbackInfo& info) { return Changed(info, Change::kRemove); }
  Napi::Value SetWeight(const Napi::CallbackInfo& info) { return Changed(info, Change::kSetWeight); }

  Napi::Value NodeNames(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    size_t n = chash_router_node_count(r);
    Napi::Array out = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; ++i) {
      size_t len = 0;
      const char* name = chash_router_node_name(r, static_cast<uint32_t>(i), &len);
      out.Set(static_cast<uint32_t>(i), Napi::String::New(env, name, len));
    }
    return out;
  }

  Napi::Value Weight(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    if (!info[0].IsNumber()) {
      ThrowType(env, "chash: weight(index) takes a node index");
      return env.Undefined();
    }
    return Napi::Number::New(env, chash_router_node_weight(r, info[0].As<Napi::Number>().Uint32Value()));
  }

  Napi::Value Describe(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const chash_router* r = Live(env);
    if (r == nullptr) return env.Undefined();
    return Napi::String::New(env, chash_router_describe(r));
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    chash_router_free(router_);
    router_ = nullptr;
    return info.Env().Undefined();
  }

  chash_router* router_ = nullptr;
  // A batch's packing buffers, kept between calls: Node runs one call at a time per isolate.
  std::vector<char> packed_;
  std::vector<int32_t> offsets_;
};

Napi::Value Version(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), chash_version());
}

Napi::Value Presets(const Napi::CallbackInfo& info) {
  size_t n = chash_preset_count();
  Napi::Array out = Napi::Array::New(info.Env(), n);
  for (size_t i = 0; i < n; ++i) out.Set(static_cast<uint32_t>(i), chash_preset_name(i));
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  Napi::Function cls = NativeRouter::Init(env);
  // The class's constructor, per env (a worker thread loads the addon into its own env), for
  // the routers membership changes return; freed with the env.
  env.SetInstanceData(new Napi::FunctionReference(Napi::Persistent(cls)));
  exports.Set("NativeRouter", cls);
  exports.Set("version", Napi::Function::New(env, Version));
  exports.Set("presets", Napi::Function::New(env, Presets));
  return exports;
}

}  // namespace

NODE_API_MODULE(chash, Init)
