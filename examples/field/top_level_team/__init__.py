"""The team folder is a package: its entry module uses relative imports."""
