// spvdump, run as a program: output, exit codes (0 ok, 1 error, 2 usage), --json, --help.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <map>

#include "cache/cache_test_utils.h"
#include "cache/disk_cache.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache/tuning.h"
#include "codegen/codegen.h"

using namespace cache_test;
namespace cache = mlx::core::vulkan::cache;

namespace {

namespace codegen = mlx::core::vulkan::codegen;

struct Run {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Far above any command's run time on a loaded 2-core machine.
constexpr int kTimeoutS = 120;

// Runs the spvdump binary with args (and extra environment), capturing its output.
Run spvdump(const std::vector<std::string>& args,
            const std::map<std::string, std::string>& env = {}) {
  TempDir io;
  fs::path out = io.path() / "out", err = io.path() / "err";
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::unsetenv("MLX_VK_CACHE_DIR");
    ::setenv("HOME", "/nonexistent-home-for-spvdump-tests", 1);
    for (const auto& [k, v] : env) {
      ::setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char*> argv = {const_cast<char*>(SPVDUMP_PATH)};
    for (const auto& a : args) {
      argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    ::execv(SPVDUMP_PATH, argv.data());
    ::_exit(127);
  }
  // A command that hangs (a FIFO read without O_NONBLOCK, say) is killed and fails with
  // code -2, rather than stalling the whole suite.
  int status = 0;
  bool timed_out = false;
  for (int waited_ms = 0; ::waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
    if (waited_ms >= kTimeoutS * 1000) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    ::usleep(10000);
  }
  Run r;
  r.code = timed_out ? -2 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) {
    ++n;
  }
  return n;
}

const char* kAddKey = "binary:idx=32,in=f32.f32,layout=cc,op=Add,out=f32";

// A real kernel, built as the runtime would, stored for device A; returns its hash.
uint64_t store_real_kernel(const fs::path& root) {
  auto key = codegen::KernelKey::parse(kAddKey);
  codegen::DeviceCaps caps;
  caps.fingerprint = kDeviceA;
  auto source = codegen::render(key, caps);
  int level = codegen::optimizer_level_for(key.family);
  auto module = codegen::compile(key, source, level);
  KernelEntry e;
  e.hash = codegen::kernel_hash(key, source, caps, level);
  e.key = key.canonical();
  e.template_name = source.template_name;
  e.template_hash = source.template_hash;
  e.defines = source.defines;
  e.glsl = source.glsl;
  e.compiler_version = codegen::compiler_version();
  e.optimizer_level = module.optimizer_level;
  e.glslang_ms = module.glslang_ms;
  e.optimize_ms = module.optimize_ms;
  e.spirv = module.words;
  auto cache = DiskCache::open(config_for(root), kDeviceA);
  cache.store(e);
  cache.store_pipeline_cache(make_pipeline_blob(0xaa));
  return e.hash;
}

// Synthetic entries: SPIR-V-shaped but not valid modules; two share the prefix "abcd".
void store_synthetic(const fs::path& root) {
  auto b = DiskCache::open(config_for(root), kDeviceB);
  auto e1 = make_entry(0xabcd000000000001ull);
  e1.key = "unary:idx=32,in=f16,layout=c,op=Exp,out=f16";
  auto e2 = make_entry(0xabcd000000000002ull);
  e2.key = "copy:idx=64,in=bf16,layout=g,op=Copy,out=f32,rank=n";
  b.store(e1);
  b.store(e2);
  b.store_pipeline_cache(make_pipeline_blob(0xbb));
}

// The real kernel (device A) plus two synthetic ones (device B) in a fresh root.
struct Fixture {
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  uint64_t real_hash = store_real_kernel(root);
  Fixture() {
    store_synthetic(root);
  }
  std::vector<std::string> with_dir(std::vector<std::string> args) const {
    args.push_back("--dir");
    args.push_back(root.string());
    return args;
  }
};

}  // namespace

TEST_CASE("spvdump --help lists every subcommand and each subcommand has --help") {
  Run r = spvdump({"--help"});
  CHECK(r.code == 0);
  const std::vector<std::string> names = {"list",  "show",   "stats",   "verify",
                                          "clear", "dis",    "reflect", "glsl",
                                          "gen",   "export", "import",  "prewarm",
                                          "tuning"};
  for (const auto& name : names) {
    CAPTURE(name);
    CHECK(has(r.out, "  " + name + " "));
    Run h = spvdump({name, "--help"});
    CHECK(h.code == 0);
    CHECK(has(h.out, "usage: spvdump " + name));
    CHECK(h.err.empty());
  }
  CHECK(spvdump({"help", "list"}).out == spvdump({"list", "--help"}).out);
}

TEST_CASE("usage mistakes exit with code 2 and say what was wrong") {
  Run none = spvdump({});
  CHECK(none.code == 2);
  CHECK(has(none.err, "usage: spvdump"));
  Run unknown = spvdump({"frobnicate"});
  CHECK(unknown.code == 2);
  CHECK(has(unknown.err, "unknown command 'frobnicate'"));
  Run option = spvdump({"list", "--colour"});
  CHECK(option.code == 2);
  CHECK(has(option.err, "unknown option --colour"));
  Run missing = spvdump({"show"});
  CHECK(missing.code == 2);
  CHECK(has(missing.err, "missing argument"));
  Run extra = spvdump({"stats", "extra"});
  CHECK(extra.code == 2);
  Run novalue = spvdump({"list", "--family"});
  CHECK(novalue.code == 2);
  CHECK(has(novalue.err, "--family needs a value"));
}

TEST_CASE("list on an empty cache says so, and --json gives an empty array") {
  TempDir tmp;
  Run r = spvdump({"list", "--dir", tmp.path().string()});
  CHECK(r.code == 0);
  CHECK(has(r.out, "no cached kernels"));
  Run j = spvdump({"list", "--json", "--dir", tmp.path().string()});
  CHECK(j.code == 0);
  CHECK(j.out == "[]\n");
}

TEST_CASE("list shows every device's kernels and filters by family, dtype, text and device") {
  Fixture f;
  Run all = spvdump(f.with_dir({"list"}));
  CHECK(all.code == 0);
  CHECK(has(all.out, kAddKey));
  CHECK(has(all.out, cache::to_hex(f.real_hash)));
  CHECK(has(all.out, "3 kernels"));
  CHECK(has(all.out, "LAST_USED"));

  Run fam = spvdump(f.with_dir({"list", "--family", "unary", "--json"}));
  CHECK(fam.code == 0);
  CHECK(count(fam.out, "\"hash\":") == 1);
  CHECK(has(fam.out, "\"key\":\"unary:idx=32,in=f16,layout=c,op=Exp,out=f16\""));

  Run dt = spvdump(f.with_dir({"list", "--dtype", "f32", "--json"}));
  CHECK(count(dt.out, "\"hash\":") == 2);  // Add f32 and Copy bf16 -> f32; not Exp f16
  Run bf = spvdump(f.with_dir({"list", "--dtype", "bf16", "--json"}));
  CHECK(count(bf.out, "\"hash\":") == 1);

  Run grep = spvdump(f.with_dir({"list", "--grep", "op=Add", "--json"}));
  CHECK(count(grep.out, "\"hash\":") == 1);

  std::string device_b = cache::to_hex(cache::fingerprint_hash(kDeviceB)).substr(0, 6);
  Run dev = spvdump(f.with_dir({"list", "--device", device_b, "--json"}));
  CHECK(count(dev.out, "\"hash\":") == 2);
  Run dev_text = spvdump(f.with_dir({"list", "--device", "lavapipe", "--json"}));
  CHECK(count(dev_text.out, "\"hash\":") == 2);
}

TEST_CASE("the cache location comes from MLX_VK_CACHE_DIR when --dir is absent") {
  Fixture f;
  Run r = spvdump({"list", "--json"}, {{"MLX_VK_CACHE_DIR", f.root.string()}});
  CHECK(r.code == 0);
  CHECK(count(r.out, "\"hash\":") == 3);
}

TEST_CASE("show finds a kernel by key or hash prefix and prints its metadata and GLSL") {
  Fixture f;
  Run by_key = spvdump(f.with_dir({"show", kAddKey}));
  CHECK(by_key.code == 0);
  CHECK(has(by_key.out, cache::to_hex(f.real_hash)));
  CHECK(has(by_key.out, "binary.glsl"));
  CHECK(has(by_key.out, "#define OP(a, b) ((a) + (b))"));
  CHECK(has(by_key.out, "--- GLSL ---"));
  CHECK(has(by_key.out, "#version 450"));

  // The key in another parameter order is the same key.
  Run reordered =
      spvdump(f.with_dir({"show", "binary:op=Add,out=f32,in=f32.f32,layout=cc,idx=32"}));
  CHECK(reordered.code == 0);
  CHECK(reordered.out == by_key.out);

  Run by_hash = spvdump(f.with_dir({"show", cache::to_hex(f.real_hash).substr(0, 8), "--json"}));
  CHECK(by_hash.code == 0);
  CHECK(has(by_hash.out, "\"key\":\"" + std::string(kAddKey) + "\""));
  CHECK(has(by_hash.out, "\"glsl\":\"#version 450"));
}

TEST_CASE("show of an unknown or ambiguous kernel exits 1 with a clear message") {
  Fixture f;
  Run unknown = spvdump(f.with_dir({"show", "binary:op=Nope"}));
  CHECK(unknown.code == 1);
  CHECK(has(unknown.err, "no cached kernel matches 'binary:op=Nope'"));
  Run ambiguous = spvdump(f.with_dir({"show", "abcd"}));
  CHECK(ambiguous.code == 1);
  CHECK(has(ambiguous.err, "matches 2 kernels"));
  CHECK(has(ambiguous.err, "abcd000000000001"));
  Run exact = spvdump(f.with_dir({"show", "abcd000000000002"}));
  CHECK(exact.code == 0);
  CHECK(has(exact.out, "copy:idx=64"));
}

TEST_CASE("dis, reflect and glsl look inside a cached kernel's SPIR-V") {
  Fixture f;
  std::string hash = cache::to_hex(f.real_hash);
  Run dis = spvdump(f.with_dir({"dis", hash}));
  CHECK(dis.code == 0);
  CHECK(has(dis.out, "OpEntryPoint GLCompute"));
  CHECK(has(dis.out, "OpFAdd"));

  Run refl = spvdump(f.with_dir({"reflect", hash}));
  CHECK(refl.code == 0);
  CHECK(has(refl.out, "entry point:    main"));
  CHECK(has(refl.out, "push constants: 16 bytes"));
  CHECK(count(refl.out, "storage_buffer") == 3);

  Run rj = spvdump(f.with_dir({"reflect", hash, "--json"}));
  CHECK(rj.code == 0);
  CHECK(has(rj.out, "\"push_constant_bytes\":16"));
  CHECK(has(rj.out, "\"binding\":2"));
  CHECK(has(rj.out, "\"access\":\"write\""));

  Run glsl = spvdump(f.with_dir({"glsl", hash}));
  CHECK(glsl.code == 0);
  CHECK(has(glsl.out, "#version 450"));
  CHECK(has(glsl.out, "layout(push_constant"));
}

TEST_CASE("stats reports bytes and kernels per device, in text and JSON") {
  Fixture f;
  Run r = spvdump(f.with_dir({"stats"}));
  CHECK(r.code == 0);
  CHECK(has(r.out, "kernel files:"));
  CHECK(has(r.out, "devices:"));
  CHECK(has(r.out, kDeviceA));
  Run j = spvdump(f.with_dir({"stats", "--json"}));
  CHECK(j.code == 0);
  CHECK(has(j.out, "\"kernel_files\":3"));
  CHECK(count(j.out, "\"fingerprint\":") == 2);
}

TEST_CASE("tuning lists the autotune's records per device, in text and JSON") {
  Fixture f;
  Run none = spvdump(f.with_dir({"tuning"}));
  CHECK(none.code == 0);
  CHECK(has(none.out, "no tuning records"));
  REQUIRE_FALSE(store_tuning(f.root, kDeviceA, "gemm:f32,m=256", "128x128x16x8x8"));
  REQUIRE_FALSE(store_tuning(f.root, kDeviceB, "gemm:f16,m=64", "64x64x16x4x4"));
  Run r = spvdump(f.with_dir({"tuning"}));
  CHECK(r.code == 0);
  CHECK(has(r.out, "gemm:f32,m=256"));
  CHECK(has(r.out, "64x64x16x4x4"));
  Run j = spvdump(f.with_dir({"tuning", "--json"}));
  CHECK(j.code == 0);
  CHECK(count(j.out, "\"class\":") == 2);
  CHECK(has(j.out, "\"choice\":\"128x128x16x8x8\""));
}

TEST_CASE("verify passes a sound cache, fails a damaged one and removes bad files on request") {
  Fixture f;
  Run ok = spvdump(f.with_dir({"verify"}));
  CHECK(ok.code == 0);
  CHECK(has(ok.out, "0 bad"));

  fs::path victim = kernel_path(f.root, fingerprint_hash(kDeviceA), f.real_hash);
  auto bytes = read_bytes(victim);
  bytes[bytes.size() - 5] ^= 0x20;
  write_bytes(victim, bytes);
  Run bad = spvdump(f.with_dir({"verify"}));
  CHECK(bad.code == 1);
  CHECK(has(bad.out, "BAD " + victim.string()));
  CHECK(has(bad.out, "checksum"));
  Run bad_json = spvdump(f.with_dir({"verify", "--json"}));
  CHECK(bad_json.code == 1);
  CHECK(has(bad_json.out, "\"reason\":\"payload checksum mismatch (corrupt bytes)\""));

  Run fixed = spvdump(f.with_dir({"verify", "--remove-bad"}));
  CHECK(fixed.code == 0);
  CHECK(has(fixed.out, "1 removed"));
  CHECK_FALSE(fs::exists(victim));
  CHECK(spvdump(f.with_dir({"verify"})).code == 0);
}

TEST_CASE("verify --deep runs the SPIR-V validator and catches invalid modules") {
  TempDir tmp;
  store_real_kernel(tmp.path());
  CHECK(spvdump({"verify", "--deep", "--dir", tmp.path().string()}).code == 0);
  store_synthetic(tmp.path());  // SPIR-V headers, but not valid modules
  Run r = spvdump({"verify", "--deep", "--dir", tmp.path().string()});
  CHECK(r.code == 1);
  CHECK(count(r.out, "spirv-val") == 2);
}

TEST_CASE("clear empties the cache and export/import bring it back") {
  Fixture f;
  fs::path bundle = f.tmp.path() / "warm.bundle";
  Run ex = spvdump(f.with_dir({"export", bundle.string()}));
  CHECK(ex.code == 0);
  CHECK(has(ex.out, "exported 3 kernels and 2 pipeline caches"));

  Run cl = spvdump(f.with_dir({"clear"}));
  CHECK(cl.code == 0);
  CHECK(has(cl.out, "removed 7 files"));  // 3 kernels, 2 pipeline caches, 2 fingerprints
  CHECK(spvdump(f.with_dir({"list", "--json"})).out == "[]\n");

  Run im = spvdump(f.with_dir({"import", bundle.string(), "--fingerprint", kDeviceA, "--json"}));
  CHECK(im.code == 0);
  CHECK(has(im.out, "\"kernels\":3"));
  CHECK(has(im.out, "\"foreign_kernels\":2"));
  CHECK(has(im.out, "\"pipeline_caches\":1"));
  CHECK(has(im.out, "\"foreign_pipeline_caches\":1"));
  CHECK(count(spvdump(f.with_dir({"list", "--json"})).out, "\"hash\":") == 3);
  auto cache = DiskCache::open(config_for(f.root), kDeviceA);
  CHECK(cache.load(f.real_hash).has_value());
  CHECK(cache.load_pipeline_cache() == make_pipeline_blob(0xaa));
  CHECK_FALSE(fs::exists(pipeline_cache_path(f.root, fingerprint_hash(kDeviceB))));
}

TEST_CASE("import of a corrupt or missing bundle exits 1 and writes nothing") {
  Fixture f;
  fs::path bundle = f.tmp.path() / "b.bundle";
  REQUIRE(spvdump(f.with_dir({"export", bundle.string()})).code == 0);
  auto bytes = read_bytes(bundle);
  bytes[bytes.size() / 2] ^= 1;
  write_bytes(bundle, bytes);
  TempDir fresh;
  Run r = spvdump({"import", bundle.string(), "--dir", (fresh.path() / "c").string()});
  CHECK(r.code == 1);
  CHECK(has(r.err, "corrupt"));
  CHECK_FALSE(fs::exists(fresh.path() / "c"));
  Run missing = spvdump({"import", "/nonexistent.bundle", "--dir", fresh.path().string()});
  CHECK(missing.code == 1);
  CHECK(has(missing.err, "cannot open bundle"));
}

TEST_CASE("gen renders and compiles a key, and its hash matches the cached entry") {
  Fixture f;
  Run r = spvdump({"gen", kAddKey, "--fingerprint", kDeviceA, "--glsl"});
  CHECK(r.code == 0);
  CHECK(has(r.out, "hash:             " + cache::to_hex(f.real_hash)));
  CHECK(has(r.out, "workgroup size:"));
  CHECK(has(r.out, "#define OP(a, b) ((a) + (b))"));
  CHECK(has(r.out, "--- GLSL ---"));

  fs::path spv = f.tmp.path() / "add.spv";
  Run o = spvdump({"gen", kAddKey, "-o", spv.string(), "--json"});
  CHECK(o.code == 0);
  CHECK(has(o.out, "\"num_buffers\":3"));
  auto words = read_bytes(spv);
  REQUIRE(words.size() > 20);
  CHECK(words[0] == 0x03);  // 0x07230203, little-endian
  CHECK(words[3] == 0x07);
  Run dis = spvdump({"dis", spv.string()});
  CHECK(dis.code == 0);
  CHECK(has(dis.out, "OpFAdd"));
}

TEST_CASE("gen renders a kernel that needs integer dot products when --caps grants them") {
  // qmv's one-row sums on integer dot products (templates/qmv.glsl, X8), x streamed.
  const std::string key =
      "qmv:bits=4,dot=i8,dtype=bf16,glu=0,gs=64,idx=32,ks=1,mr=1,nc=4,norm=1,pf=0,res=0,sg=1,"
      "stream=1,tpr=32,u=1,vec=8,wvec=1,xpacks=160";
  const std::string caps =
      "subgroup_size=32,subgroup_shuffle=1,storage_16bit=1,max_shared_memory=49152,"
      "max_workgroup_invocations=1024";
  Run without = spvdump({"gen", key, "--caps", caps});
  CHECK(without.code == 1);
  CHECK(has(without.err, "dot i8"));
  Run with = spvdump({"gen", key, "--caps", caps + ",integer_dot_product=1", "--dis"});
  CHECK(with.code == 0);
  CHECK(has(with.out, "OpSDot"));
}

TEST_CASE("gen reports bad keys and bad options clearly") {
  Run family = spvdump({"gen", "nosuchfamily:op=Add"});
  CHECK(family.code == 1);
  CHECK(has(family.err, "nosuchfamily"));
  Run malformed = spvdump({"gen", "binary:op"});
  CHECK(malformed.code == 1);
  CHECK_FALSE(malformed.err.empty());
  Run caps = spvdump({"gen", kAddKey, "--caps", "warp_speed=9"});
  CHECK(caps.code == 2);
  CHECK(has(caps.err, "unknown capability 'warp_speed'"));
  Run opt = spvdump({"gen", kAddKey, "--opt", "7"});
  CHECK(opt.code == 2);
}

// Building keys needs a device; tests/warm covers that. These need none: every line fails
// before the runtime starts.
TEST_CASE("prewarm reports lines that are not keys with their line numbers and exits 1") {
  TempDir tmp;
  fs::path keys = tmp.path() / "keys.txt";
  std::string text = "# comment\n\nbinary:op\n  :op=Add  \n";
  write_bytes(keys, std::vector<uint8_t>(text.begin(), text.end()));
  Run r = spvdump({"prewarm", keys.string(), "--dir", tmp.path().string()});
  CHECK(r.code == 1);
  CHECK(has(r.out, "failed: line 3: binary:op: not a kernel key"));
  CHECK(has(r.out, "failed: line 4: :op=Add: not a kernel key"));
  CHECK(has(r.out, "0 compiled, 0 already cached, 2 failed"));
  CHECK(has(r.err, "line 3: binary:op"));
}

TEST_CASE("prewarm of a missing key file exits 1 and without a file exits 2") {
  TempDir tmp;
  Run r = spvdump({"prewarm", (tmp.path() / "none.txt").string(), "--dir", tmp.path().string()});
  CHECK(r.code == 1);
  CHECK(has(r.err, "cannot read key file"));
  Run usage = spvdump({"prewarm", "--dir", tmp.path().string()});
  CHECK(usage.code == 2);
  Run empty_ok = spvdump({"prewarm", "/dev/null", "--dir", tmp.path().string()});
  CHECK(empty_ok.code == 0);
  CHECK(has(empty_ok.out, "prewarm: 0 compiled, 0 already cached, 0 failed"));
  for (const char* bad : {"0", "x", "300"}) {
    Run jobs = spvdump({"prewarm", "/dev/null", "--jobs", bad, "--dir", tmp.path().string()});
    CHECK(jobs.code == 2);
    CHECK(has(jobs.err, "--jobs takes a number of threads from 1 to 256"));
  }
}

TEST_CASE("verify and list report a FIFO in place of an entry as bad instead of hanging") {
  Fixture f;
  fs::path fifo = kernel_path(f.root, fingerprint_hash(kDeviceA), 0x0123456789abcdefull);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);

  Run verify = spvdump(f.with_dir({"verify"}));
  CHECK(verify.code == 1);  // -2: it blocked opening the FIFO
  CHECK(has(verify.out, "BAD " + fifo.string()));
  CHECK(has(verify.out, "a FIFO, not a regular file"));
  CHECK(has(verify.out, "1 bad"));

  Run list = spvdump(f.with_dir({"list"}));
  CHECK(list.code == 1);
  CHECK(count(list.out, "binary:") + count(list.out, "unary:") + count(list.out, "copy:") == 3);
  CHECK(has(list.err, "BAD " + fifo.string()));
  CHECK(has(list.err, "1 bad kernel file not listed"));
  Run list_json = spvdump(f.with_dir({"list", "--json"}));
  CHECK(list_json.code == 1);
  CHECK(count(list_json.out, "\"hash\":") == 3);

  Run stats = spvdump(f.with_dir({"stats", "--json"}));
  CHECK(stats.code == 0);
  CHECK(has(stats.out, "\"kernel_files\":3"));

  Run fixed = spvdump(f.with_dir({"verify", "--remove-bad"}));
  CHECK(fixed.code == 0);
  CHECK_FALSE(fs::exists(fifo));
  CHECK(spvdump(f.with_dir({"list"})).code == 0);
}

TEST_CASE("commands that read the cache exit 1 when its directory does not exist") {
  TempDir tmp;
  std::string missing = (tmp.path() / "nonexistent").string();
  for (const std::string command : {"list", "verify", "clear", "stats", "show", "export"}) {
    CAPTURE(command);
    std::vector<std::string> args = {command};
    if (command == "show") {
      args.push_back("abcd");
    } else if (command == "export") {
      args.push_back((tmp.path() / "out.bundle").string());
    }
    args.insert(args.end(), {"--dir", missing});
    Run r = spvdump(args);
    CHECK(r.code == 1);
    CHECK(has(r.err, "cache directory " + missing + " does not exist"));
    CHECK(r.out.empty());
  }
  CHECK_FALSE(fs::exists(missing));  // clear did not create it either

  Run env = spvdump({"list"}, {{"MLX_VK_CACHE_DIR", missing}});
  CHECK(env.code == 1);
  CHECK(has(env.err, "does not exist (from the environment"));

  fs::path file = tmp.path() / "file";
  write_bytes(file, {1});
  Run not_dir = spvdump({"verify", "--dir", file.string()});
  CHECK(not_dir.code == 1);
  CHECK(has(not_dir.err, "is not a directory"));
}

TEST_CASE("dis, reflect and glsl of a missing or special file name the file, not the cache") {
  TempDir tmp;
  for (const std::string command : {"dis", "reflect", "glsl"}) {
    CAPTURE(command);
    Run r = spvdump({command, "nosuch.spv", "--dir", tmp.path().string()});
    CHECK(r.code == 1);
    CHECK(has(r.err, "no such file: nosuch.spv"));
    CHECK_FALSE(has(r.err, "no cached kernel"));
  }
  Run path = spvdump({"dis", (tmp.path() / "kernel").string(), "--dir", tmp.path().string()});
  CHECK(path.code == 1);
  CHECK(has(path.err, "no such file: " + (tmp.path() / "kernel").string()));

  fs::path fifo = tmp.path() / "pipe.spv";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  Run special = spvdump({"dis", fifo.string()});
  CHECK(special.code == 1);  // -2: it blocked opening the FIFO
  CHECK(has(special.err, "a FIFO, not a regular file"));
}

TEST_CASE("import of a FIFO as the bundle fails at once") {
  TempDir tmp;
  fs::path fifo = tmp.path() / "warm.bundle";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  Run r = spvdump({"import", fifo.string(), "--dir", (tmp.path() / "c").string()});
  CHECK(r.code == 1);  // -2: it blocked opening the FIFO
  CHECK(has(r.err, "a FIFO, not a regular file"));
}
