# Install rules and Debian packages: `cpack -G DEB` in the build tree makes
#   ringmaster        the desktop app, ringmasterctl, a desktop entry with its icon, job templates
#   ringmaster-agent  the agent, the native worker, the systemd unit and a default config
# with dependencies from dpkg-shlibdeps (Debian's own library packages). The app starts its local
# agent from beside itself, so ringmaster depends on ringmaster-agent of the same version.
set(RM_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/installer/debian)

install(TARGETS ringmasterctl RUNTIME DESTINATION bin COMPONENT app)
if(TARGET ringmaster)
  install(TARGETS ringmaster RUNTIME DESTINATION bin COMPONENT app)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/ DESTINATION share/ringmaster COMPONENT app
        PATTERN "__pycache__" EXCLUDE)
install(FILES ${RM_PACKAGING_DIR}/ringmaster.desktop DESTINATION share/applications COMPONENT app)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/ringmaster.png
        DESTINATION share/icons/hicolor/256x256/apps COMPONENT app)

install(TARGETS ringmaster-agent ringmaster-worker RUNTIME DESTINATION bin COMPONENT agent)
set(AGENT /usr/bin/ringmaster-agent)
set(CONFIG /etc/ringmaster/agent.toml)
configure_file(${PROJECT_SOURCE_DIR}/installer/systemd/ringmaster-agent.service.in
               ${PROJECT_BINARY_DIR}/packaging/ringmaster-agent.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/ringmaster-agent.service
        DESTINATION lib/systemd/system COMPONENT agent)
# An absolute destination: /etc, whatever the prefix. dpkg keeps a user's edits (a conffile).
install(FILES ${RM_PACKAGING_DIR}/agent.toml DESTINATION /etc/ringmaster COMPONENT agent)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ringmaster)
set(CPACK_PACKAGE_VENDOR "Ringmaster")
set(CPACK_PACKAGE_CONTACT "Ringmaster developers <ringmaster@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL app agent)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/ringmaster")

set(CPACK_DEBIAN_APP_PACKAGE_NAME ringmaster)
set(CPACK_DEBIAN_APP_PACKAGE_DEPENDS "ringmaster-agent (= ${PROJECT_VERSION})")
string(CONCAT CPACK_COMPONENT_APP_DESCRIPTION
    "Desktop orchestrator for data-parallel training on GPU clusters\n"
    "The Ringmaster desktop app and ringmasterctl: submit jobs to Ringmaster agents, watch\n"
    "loss, throughput and node health live, keep every run in a SQLite history.")
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME ringmaster-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "adduser")
# The demo and `kind: fashion_mnist` jobs read it on the host that runs the ranks.
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "dataset-fashion-mnist")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA ${RM_PACKAGING_DIR}/agent/conffiles
    ${RM_PACKAGING_DIR}/agent/postinst ${RM_PACKAGING_DIR}/agent/prerm
    ${RM_PACKAGING_DIR}/agent/postrm)
string(CONCAT CPACK_COMPONENT_AGENT_DESCRIPTION
    "Ringmaster agent for GPU hosts\n"
    "Runs the training ranks of Ringmaster jobs (PyTorch DDP under torchrun, or Ringmaster's\n"
    "native trainer), journals their metrics and the host's health, and answers only the\n"
    "client keys it has authorized (CurveZMQ). Ships a systemd unit, not enabled by default.")
include(CPack)
