// tools/vkd/Files: input files are regular files read within a cap; FilePlan refuses, before
// anything is written, an output that is a file the command reads (by identity: symlinks, hard
// links, other spellings), two outputs that are one file, non-regular targets and unusable
// directories.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tools/vkd/Args.h"
#include "tools/vkd/Files.h"

namespace vkd::cli {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test temp dir, removed at the end.
class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("vkd_files_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  fs::path dir_;
};

// The CliError message (and exit code 2) of `f`; fails the test when nothing is thrown.
template <typename F>
std::string cli_error(F&& f) {
  try {
    f();
  } catch (const CliError& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST_F(FilesTest, ReadInputFileReadsRegularFilesWithinTheCap) {
  const std::string g = write("g.json", "{}\n");
  EXPECT_EQ(read_input_file(g, "graph file", 16), (std::vector<uint8_t>{'{', '}', '\n'}));
  EXPECT_EQ(cli_error([&] { read_input_file(g, "graph file", 2); }),
            "cannot read graph file '" + g +
                "': it is 3 bytes, more than the 2 bytes a graph file may have");
  EXPECT_EQ(cli_error([&] { read_input_file(path("none"), "model file", 16); }),
            "cannot read model file '" + path("none") + "': no such file");
  EXPECT_EQ(cli_error([&] { read_input_file(dir_.string(), "model file", 16); }),
            "cannot read model file '" + dir_.string() + "': it is a directory");
}

TEST_F(FilesTest, DevicesAndFifosAreNeverRead) {
  EXPECT_EQ(cli_error([] { read_input_file("/dev/zero", "weights file", 1 << 20); }),
            "cannot read weights file '/dev/zero': it is a character device, not a regular file");
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(cli_error([&] { read_input_file(fifo, "graph file", 1 << 20); }),
            "cannot read graph file '" + fifo + "': it is a FIFO (named pipe), not a regular file");
  // A symlink is followed: to a device it is refused too.
  fs::create_symlink("/dev/zero", path("zero.npy"));
  EXPECT_NE(cli_error([&] {
              read_input_file(path("zero.npy"), "x", 1);
            }).find("it is a character device"),
            std::string::npos);
}

TEST_F(FilesTest, InputFileReadsNoMoreThanAsked) {
  const std::string f = write("f", "abcdef");
  InputFile file(f);
  EXPECT_EQ(file.size(), 6u);
  EXPECT_EQ(file.read(2), (std::vector<uint8_t>{'a', 'b'}));
  EXPECT_EQ(file.read(100), (std::vector<uint8_t>{'c', 'd', 'e', 'f'}));
  EXPECT_TRUE(file.read(1).empty());
}

// An output that is an input, however it is spelled, is refused with --force too.
TEST_F(FilesTest, AnOutputThatIsAnInputIsRefused) {
  const std::string g = write("g.json", "graph");
  fs::create_symlink(g, path("link.vkd"));
  fs::create_hard_link(g, path("hard.vkd"));
  fs::create_directories(dir_ / "sub");
  const std::string dotted = (dir_ / "sub" / ".." / "g.json").string();
  for (const std::string& out : {g, path("link.vkd"), path("hard.vkd"), dotted}) {
    SCOPED_TRACE(out);
    FilePlan plan;
    plan.add_input("the graph", g);
    plan.add_output("output", "-o " + out, out);
    const std::string msg = cli_error([&] { plan.check(/*force=*/true); });
    EXPECT_EQ(msg, "-o " + out + " is the graph" + (out == g ? "" : " ('" + g + "')") +
                       "; refusing to overwrite a file this command reads");
  }
  std::ifstream in(g);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "graph");
}

TEST_F(FilesTest, TwoOutputsThatAreOneFileAreRefused) {
  FilePlan plan;
  plan.add_output("output 'y'", "output 'y' (" + path("y.npy") + ")", path("y.npy"));
  plan.add_output("trace", "--trace " + path("sub/../y.npy"), path("sub/../y.npy"));
  fs::create_directories(dir_ / "sub");
  EXPECT_EQ(cli_error([&] { plan.check(false); }),
            "--trace " + path("sub/../y.npy") + " and output 'y' (" + path("y.npy") +
                ") are the same file; each output needs its own");
}

TEST_F(FilesTest, TargetsAreCheckedTogether) {
  write("old.npy", "x");
  fs::create_directories(dir_ / "adir");
  FilePlan plan;
  plan.add_output("output", "a", path("old.npy"));
  plan.add_output("output", "b", path("adir"));
  plan.add_output("output", "c", path("nodir/x.npy"));
  plan.add_output("output", "d", "/dev/null");
  plan.add_output("output", "e", path("fine.npy"));
  EXPECT_EQ(cli_error([&] { plan.check(false); }),
            "output: '" + path("old.npy") + "' already exists (pass --force to overwrite)\n" +
                "output: '" + path("adir") + "' is a directory\n" + "output: cannot write '" +
                path("nodir/x.npy") + "': directory '" + path("nodir") + "' does not exist\n" +
                "output: '/dev/null' is a character device, not a regular file; refusing to "
                "replace it");
  // --force lifts only the first.
  EXPECT_EQ(cli_error([&] { plan.check(true); }).find("old.npy"), std::string::npos);
}

TEST_F(FilesTest, OutputsInADirectoryToBeCreated) {
  FilePlan plan;
  plan.add_new_directory(path("new"));
  plan.add_output("output 'y'", "output 'y'", path("new/y.npy"));
  plan.add_output("trace", "--trace", path("new/t.json"));
  EXPECT_NO_THROW(plan.check(false));
  plan.add_output("trace", "--trace new/y.npy", path("new/./y.npy"));
  EXPECT_NE(cli_error([&] { plan.check(false); }).find("are the same file"), std::string::npos);
}

TEST_F(FilesTest, FileKeysOfPathsNotThereYet) {
  fs::create_directories(dir_ / "a");
  const auto k1 = file_key(path("a/b/c.npy"));
  const auto k2 = file_key(path("a/./b/../b/c.npy"));
  ASSERT_TRUE(k1 && k2);
  EXPECT_EQ(k1->rest, "b/c.npy");
  EXPECT_TRUE(*k1 == *k2);
  EXPECT_FALSE(*k1 == *file_key(path("a/b/d.npy")));
}

}  // namespace
}  // namespace vkd::cli
