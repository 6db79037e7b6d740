/* SPDX-License-Identifier: Apache-2.0 */
/* libchash_jni.so: the native methods of dev.chash.Router, each a direct call into the C ABI
 * (chash/chash_c.h). Nothing is hashed or decided here: this file only moves Java arrays to C
 * pointers and C errors to Java exceptions.
 *
 * Keys arrive as byte[] (Java encodes strings as UTF-8, see Router.java) and are read in place
 * with GetPrimitiveArrayCritical: no copy, and no JNI call between Get and Release, as the JNI
 * spec requires. Every failure becomes a Java exception (ChashException with libchash's message
 * and code, NullPointerException, OutOfMemoryError) and the native method returns at once;
 * nothing here aborts the JVM. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chash/chash_c.h"
#include "chash_packed.h"

#define ROUTER(h) ((const chash_router*)(intptr_t)(h))

/* Throws ChashException(code, status name, message) for err and frees it. */
static void throw_chash(JNIEnv* env, int code, chash_error* err) {
  const char* msg = err ? chash_error_message(err) : "chash: out of memory";
  jclass cls = (*env)->FindClass(env, "dev/chash/ChashException");
  if (cls != NULL) {
    jmethodID ctor =
        (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;Ljava/lang/String;)V");
    jstring jstatus = (*env)->NewStringUTF(env, chash_status_name(code));
    jstring jmsg = (*env)->NewStringUTF(env, msg);
    if (ctor != NULL && jstatus != NULL && jmsg != NULL) {
      jobject ex = (*env)->NewObject(env, cls, ctor, (jint)code, jstatus, jmsg);
      if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
    }
  }
  chash_error_free(err);
}

static void throw_named(JNIEnv* env, const char* cls_name, const char* msg) {
  jclass cls = (*env)->FindClass(env, cls_name);
  if (cls != NULL) (*env)->ThrowNew(env, cls, msg);
}

/* A Java String as a malloc'd NUL-terminated UTF-8 copy; NULL for a null string (and for an
 * exception pending, which *failed reports). Java's modified UTF-8 differs from UTF-8 only for NUL
 * and supplementary characters, neither of which occurs in a preset, algorithm, hash or option
 * name that libchash accepts: such a spec is refused with libchash's message either way. */
static char* utf_copy(JNIEnv* env, jstring s, int* failed) {
  if (s == NULL) return NULL;
  const char* chars = (*env)->GetStringUTFChars(env, s, NULL);
  if (chars == NULL) {
    *failed = 1;
    return NULL;
  }
  char* copy = strdup(chars);
  (*env)->ReleaseStringUTFChars(env, s, chars);
  if (copy == NULL) {
    *failed = 1;
    throw_named(env, "java/lang/OutOfMemoryError", "chash: out of memory");
  }
  return copy;
}

static jlong new_or_throw(JNIEnv* env, int rc, chash_router* out, chash_error* err) {
  if (rc != CHASH_OK) {
    throw_chash(env, rc, err);
    return 0;
  }
  return (jlong)(intptr_t)out;
}

JNIEXPORT jlong JNICALL Java_dev_chash_Router_nativeNew(JNIEnv* env, jclass cls, jstring preset,
                                                        jstring algorithm, jstring ring,
                                                        jstring hash, jstring hash_tag,
                                                        jobjectArray opt_names,
                                                        jobjectArray opt_values,
                                                        jobjectArray names, jintArray weights) {
  (void)cls;
  jlong result = 0;
  int failed = 0;
  jsize n_opts = (*env)->GetArrayLength(env, opt_names);
  jsize n_nodes = (*env)->GetArrayLength(env, names);
  chash_spec spec = {0};
  chash_option* opts = calloc((size_t)n_opts + 1, sizeof *opts);
  const char** node_names = calloc((size_t)n_nodes + 1, sizeof *node_names);
  size_t* lengths = calloc((size_t)n_nodes + 1, sizeof *lengths);
  uint32_t* node_weights = calloc((size_t)n_nodes + 1, sizeof *node_weights);
  jbyteArray* arrays = calloc((size_t)n_nodes + 1, sizeof *arrays);
  jsize pinned = 0;
  if (opts == NULL || node_names == NULL || lengths == NULL || node_weights == NULL ||
      arrays == NULL) {
    throw_named(env, "java/lang/OutOfMemoryError", "chash: out of memory");
    goto done;
  }
  spec.preset = utf_copy(env, preset, &failed);
  spec.algorithm = utf_copy(env, algorithm, &failed);
  spec.ring = utf_copy(env, ring, &failed);
  spec.hash = utf_copy(env, hash, &failed);
  spec.hash_tag = utf_copy(env, hash_tag, &failed);
  for (jsize i = 0; i < n_opts && !failed; ++i) {
    opts[i].name = utf_copy(env, (*env)->GetObjectArrayElement(env, opt_names, i), &failed);
    opts[i].value = utf_copy(env, (*env)->GetObjectArrayElement(env, opt_values, i), &failed);
  }
  if (failed) goto done;
  spec.options = opts;
  spec.num_options = (size_t)n_opts;
  (*env)->GetIntArrayRegion(env, weights, 0, n_nodes, (jint*)node_weights);
  /* Node names are bytes (they may hold NUL): pinned with GetByteArrayElements, which allows JNI
   * calls while held, until the router has copied them. */
  for (; pinned < n_nodes; ++pinned) {
    arrays[pinned] = (jbyteArray)(*env)->GetObjectArrayElement(env, names, pinned);
    node_names[pinned] = (const char*)(*env)->GetByteArrayElements(env, arrays[pinned], NULL);
    if (node_names[pinned] == NULL) goto done;
    lengths[pinned] = (size_t)(*env)->GetArrayLength(env, arrays[pinned]);
  }
  chash_nodes nodes = {.names = node_names,
                       .name_lengths = lengths,
                       .weights = node_weights,
                       .count = (size_t)n_nodes};
  chash_router* router = NULL;
  chash_error* err = NULL;
  int rc = chash_router_new(&spec, &nodes, &router, &err);
  result = new_or_throw(env, rc, router, err);
done:
  for (jsize i = 0; i < pinned; ++i) {
    (*env)->ReleaseByteArrayElements(env, arrays[i], (jbyte*)node_names[i], JNI_ABORT);
  }
  if (opts != NULL) {
    for (jsize i = 0; i < n_opts; ++i) {
      free((char*)opts[i].name);
      free((char*)opts[i].value);
    }
  }
  free((char*)spec.preset);
  free((char*)spec.algorithm);
  free((char*)spec.ring);
  free((char*)spec.hash);
  free((char*)spec.hash_tag);
  free(opts);
  free(node_names);
  free(lengths);
  free(node_weights);
  free(arrays);
  return result;
}

JNIEXPORT void JNICALL Java_dev_chash_Router_nativeFree(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  chash_router_free((chash_router*)(intptr_t)h);
}

JNIEXPORT jint JNICALL Java_dev_chash_Router_nativeRoute(JNIEnv* env, jclass cls, jlong h,
                                                         jbyteArray key) {
  (void)cls;
  jsize len = (*env)->GetArrayLength(env, key);
  void* bytes = (*env)->GetPrimitiveArrayCritical(env, key, NULL);
  if (bytes == NULL) return -1; /* OutOfMemoryError pending */
  uint32_t id = chash_route(ROUTER(h), bytes, (size_t)len);
  (*env)->ReleasePrimitiveArrayCritical(env, key, bytes, JNI_ABORT);
  return id == CHASH_NO_NODE ? -1 : (jint)id;
}

/* The batch, a chunk of keys per call: packed end to end with offsets (KeyPack.java), as bytes
 * (byte[] keys), as Strings' bytes with their coders (String keys, KeyPack.strings) or as their
 * UTF-16 units (String keys where the JDK's String has no bytes to read, a char[]), routed
 * straight into out[out_at ..] (bytes: bindings/common/chash_packed.h; Strings:
 * chash_route_java_strings). */
enum packed_form { kBytes, kStrings, kChars };

static void route_packed_batch(JNIEnv* env, jlong h, jarray packed, enum packed_form form,
                               jbyteArray coders, jintArray offsets, jint count, jintArray out,
                               jint out_at) {
  if (count < 0 || out_at < 0 || (*env)->GetArrayLength(env, offsets) < count + 1 ||
      (*env)->GetArrayLength(env, out) - out_at < count ||
      (form == kStrings && (*env)->GetArrayLength(env, coders) < count)) {
    throw_named(env, "java/lang/IllegalArgumentException", "chash: batch arrays too short");
    return;
  }
  jsize packed_len = (*env)->GetArrayLength(env, packed);
  void* keys = (*env)->GetPrimitiveArrayCritical(env, packed, NULL);
  jbyte* kinds = keys && form == kStrings ? (*env)->GetPrimitiveArrayCritical(env, coders, NULL)
                                          : NULL;
  jint* offs = keys && (form != kStrings || kinds)
                   ? (*env)->GetPrimitiveArrayCritical(env, offsets, NULL)
                   : NULL;
  jint* ids = offs ? (*env)->GetPrimitiveArrayCritical(env, out, NULL) : NULL;
  int rc = CHASH_OK;
  chash_error* err = NULL; /* the library's reason for refusing String keys */
  if (ids != NULL) {
    /* CHASH_NO_NODE is 0xFFFFFFFF: read as a Java int it is already -1. */
    uint32_t* into = (uint32_t*)ids + out_at;
    if (form == kBytes) {
      rc = chash_route_packed(ROUTER(h), (const char*)keys, (size_t)packed_len,
                              (const int32_t*)offs, (size_t)count, into);
    } else {
      rc = chash_route_java_strings(
          ROUTER(h), (const char*)keys, (size_t)packed_len * (form == kChars ? 2 : 1),
          (const uint8_t*)kinds, (const int32_t*)offs, (size_t)count, into, &err);
    }
  }
  if (ids != NULL) (*env)->ReleasePrimitiveArrayCritical(env, out, ids, 0);
  if (offs != NULL) (*env)->ReleasePrimitiveArrayCritical(env, offsets, offs, JNI_ABORT);
  if (kinds != NULL) (*env)->ReleasePrimitiveArrayCritical(env, coders, kinds, JNI_ABORT);
  if (keys != NULL) (*env)->ReleasePrimitiveArrayCritical(env, packed, keys, JNI_ABORT);
  if (rc == CHASH_ERR_NO_MEMORY) {
    throw_named(env, "java/lang/OutOfMemoryError", "chash: out of memory");
  } else if (rc != CHASH_OK) {
    throw_named(env, "java/lang/IllegalArgumentException",
                err != NULL ? chash_error_message(err) : "chash: bad batch offsets");
  }
  chash_error_free(err);
}

JNIEXPORT void JNICALL Java_dev_chash_Router_nativeRouteBatch(JNIEnv* env, jclass cls, jlong h,
                                                              jbyteArray packed,
                                                              jintArray offsets, jint count,
                                                              jintArray out, jint out_at) {
  (void)cls;
  route_packed_batch(env, h, packed, kBytes, NULL, offsets, count, out, out_at);
}

JNIEXPORT void JNICALL Java_dev_chash_Router_nativeRouteBatchStrings(
    JNIEnv* env, jclass cls, jlong h, jbyteArray packed, jbyteArray coders, jintArray offsets,
    jint count, jintArray out, jint out_at) {
  (void)cls;
  route_packed_batch(env, h, packed, kStrings, coders, offsets, count, out, out_at);
}

JNIEXPORT void JNICALL Java_dev_chash_Router_nativeRouteBatchUtf16(JNIEnv* env, jclass cls,
                                                                   jlong h, jcharArray chars,
                                                                   jintArray offsets, jint count,
                                                                   jintArray out, jint out_at) {
  (void)cls;
  route_packed_batch(env, h, chars, kChars, NULL, offsets, count, out, out_at);
}

JNIEXPORT jint JNICALL Java_dev_chash_Router_nativeRouteN(JNIEnv* env, jclass cls, jlong h,
                                                          jbyteArray key, jintArray out) {
  (void)cls;
  jsize len = (*env)->GetArrayLength(env, key);
  jsize max = (*env)->GetArrayLength(env, out);
  uint32_t* ids = malloc(((size_t)max + 1) * sizeof *ids);
  jbyte* bytes = ids ? (*env)->GetByteArrayElements(env, key, NULL) : NULL;
  if (bytes == NULL) {
    free(ids);
    if (!(*env)->ExceptionCheck(env)) {
      throw_named(env, "java/lang/OutOfMemoryError", "chash: out of memory");
    }
    return 0;
  }
  size_t count = 0;
  chash_error* err = NULL;
  int rc = chash_route_n(ROUTER(h), (const char*)bytes, (size_t)len, ids, (size_t)max, &count, &err);
  (*env)->ReleaseByteArrayElements(env, key, bytes, JNI_ABORT);
  if (rc != CHASH_OK) {
    free(ids);
    throw_chash(env, rc, err);
    return 0;
  }
  (*env)->SetIntArrayRegion(env, out, 0, (jsize)count, (const jint*)ids);
  free(ids);
  return (jint)count;
}

/* One membership change: name pinned, the C ABI call, its error thrown. */
enum change { kAdd, kRemove, kSetWeight };

static jlong change(JNIEnv* env, jlong h, jbyteArray name, jint weight, enum change what) {
  if (weight < 0) {
    throw_named(env, "java/lang/IllegalArgumentException", "chash: a weight must be >= 0");
    return 0;
  }
  jsize len = (*env)->GetArrayLength(env, name);
  jbyte* bytes = (*env)->GetByteArrayElements(env, name, NULL);
  if (bytes == NULL) return 0;
  chash_router* out = NULL;
  chash_error* err = NULL;
  int rc;
  if (what == kAdd) {
    rc = chash_router_add_node(ROUTER(h), (const char*)bytes, (size_t)len, (uint32_t)weight, &out,
                               &err);
  } else if (what == kRemove) {
    rc = chash_router_remove_node(ROUTER(h), (const char*)bytes, (size_t)len, &out, &err);
  } else {
    rc = chash_router_set_weight(ROUTER(h), (const char*)bytes, (size_t)len, (uint32_t)weight,
                                 &out, &err);
  }
  (*env)->ReleaseByteArrayElements(env, name, bytes, JNI_ABORT);
  return new_or_throw(env, rc, out, err);
}

JNIEXPORT jlong JNICALL Java_dev_chash_Router_nativeAddNode(JNIEnv* env, jclass cls, jlong h,
                                                            jbyteArray name, jint weight) {
  (void)cls;
  return change(env, h, name, weight, kAdd);
}

JNIEXPORT jlong JNICALL Java_dev_chash_Router_nativeRemoveNode(JNIEnv* env, jclass cls, jlong h,
                                                               jbyteArray name) {
  (void)cls;
  return change(env, h, name, 0, kRemove);
}

JNIEXPORT jlong JNICALL Java_dev_chash_Router_nativeSetWeight(JNIEnv* env, jclass cls, jlong h,
                                                              jbyteArray name, jint weight) {
  (void)cls;
  return change(env, h, name, weight, kSetWeight);
}

JNIEXPORT jobjectArray JNICALL Java_dev_chash_Router_nativeNodeNames(JNIEnv* env, jclass cls,
                                                                     jlong h) {
  (void)cls;
  size_t n = chash_router_node_count(ROUTER(h));
  jclass bytes_cls = (*env)->FindClass(env, "[B");
  if (bytes_cls == NULL) return NULL;
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)n, bytes_cls, NULL);
  for (size_t i = 0; out != NULL && i < n; ++i) {
    size_t len = 0;
    const char* name = chash_router_node_name(ROUTER(h), (uint32_t)i, &len);
    jbyteArray a = (*env)->NewByteArray(env, (jsize)len);
    if (a == NULL) return NULL;
    (*env)->SetByteArrayRegion(env, a, 0, (jsize)len, (const jbyte*)name);
    (*env)->SetObjectArrayElement(env, out, (jsize)i, a);
    (*env)->DeleteLocalRef(env, a);
  }
  return out;
}

JNIEXPORT jint JNICALL Java_dev_chash_Router_nativeWeight(JNIEnv* env, jclass cls, jlong h,
                                                          jint index) {
  (void)env;
  (void)cls;
  return (jint)chash_router_node_weight(ROUTER(h), (uint32_t)index);
}

JNIEXPORT jstring JNICALL Java_dev_chash_Router_nativeDescribe(JNIEnv* env, jclass cls, jlong h) {
  (void)cls;
  return (*env)->NewStringUTF(env, chash_router_describe(ROUTER(h)));
}

JNIEXPORT jobjectArray JNICALL Java_dev_chash_Router_nativePresets(JNIEnv* env, jclass cls) {
  (void)cls;
  size_t n = chash_preset_count();
  jclass str = (*env)->FindClass(env, "java/lang/String");
  if (str == NULL) return NULL;
  jobjectArray out = (*env)->NewObjectArray(env, (jsize)n, str, NULL);
  for (size_t i = 0; out != NULL && i < n; ++i) {
    jstring s = (*env)->NewStringUTF(env, chash_preset_name(i));
    if (s == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, out, (jsize)i, s);
    (*env)->DeleteLocalRef(env, s);
  }
  return out;
}

JNIEXPORT jstring JNICALL Java_dev_chash_Router_nativeVersion(JNIEnv* env, jclass cls) {
  (void)cls;
  return (*env)->NewStringUTF(env, chash_version());
}
