# SPDX-License-Identifier: GPL-2.0
# vhost-iommu: load the module (and vhost_net), run the selftest that plays VMM and guest
# (its own TAP), then check the module refuses to go while a file is open
# and goes cleanly once none is.
rc=0
if ! modprobe vhost_iommu; then
	echo "# modprobe vhost_iommu failed"
	rc=1
fi
# vhost-net, for the test that binds it to an endpoint
if ! modprobe vhost_net; then
	echo "# modprobe vhost_net failed"
	rc=1
fi
/bin/vhost_iommu_test || rc=1
exec 3<>/dev/vhost-iommu
if rmmod vhost_iommu 2>/dev/null; then
	echo "# rmmod vhost_iommu succeeded with /dev/vhost-iommu open"
	rc=1
fi
exec 3>&-
if ! rmmod vhost_iommu; then
	echo "# rmmod vhost_iommu failed"
	rc=1
fi
exit $rc
