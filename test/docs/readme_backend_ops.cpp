// CTest readme_backend_ops: every op of the backend op registry (partitioner_schema) has a row
// in README.md's "Backend ops" table, named in backticks in its first cell, and every op a
// row names exists in the registry. The table's prose is written by hand; which ops it lists
// cannot drift from what a blob may call.
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "partitioner_schema/OpSchema.h"

namespace {

// The first cells of the table rows after the "### Backend ops" heading, up to the next heading.
std::set<std::string> table_ops(std::istream& in) {
  std::set<std::string> ops;
  std::string line;
  bool in_section = false;
  const std::regex name("`([a-z0-9_]+)`");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0) {
      in_section = line == "### Backend ops";
    }
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const std::string first_cell = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(first_cell.begin(), first_cell.end(), name), end; it != end;
         ++it) {
      ops.insert((*it)[1]);
    }
  }
  return ops;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: readme_backend_ops README.md\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << argv[1] << ": cannot be read\n";
    return 2;
  }
  const std::set<std::string> listed = table_ops(in);
  int problems = 0;
  for (const vkd::schema::OpSchema& op : vkd::schema::op_schemas()) {
    if (!listed.count(op.name)) {
      std::cerr << argv[1] << ": backend op '" << op.name
                << "' has no row in the Backend ops table\n";
      ++problems;
    }
  }
  for (const std::string& name : listed) {
    if (!vkd::schema::find_op_schema(name)) {
      std::cerr << argv[1] << ": the Backend ops table names '" << name
                << "', which is no backend op\n";
      ++problems;
    }
  }
  if (problems) return 1;
  std::cout << "README.md lists all " << vkd::schema::op_schemas().size() << " backend ops\n";
  return 0;
}
